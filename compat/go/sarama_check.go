// sarama_check drives Debian's sarama 1.22 (Go, 2019) against a broker, at the old
// protocol versions it sends: a SyncProducer at a chosen Kafka version (0.8.2:
// Produce v0 and message format v0; 0.10: Produce v2 and format v1), a partition
// consumer at sarama's default version (Fetch v0: format v0), a consumer group
// (JoinGroup, SyncGroup, Fetch v3 at 0.10.2) whose commits are OffsetCommit v1, and
// its committed offsets read back (OffsetFetch v1). Prints one JSON object per step;
// exits non-zero on the first failure. Run by compat/test_legacy_clients.py.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/Shopify/sarama"
)

func fail(step string, err error) {
	fmt.Printf("{\"step\": %q, \"error\": %q}\n", step, err.Error())
	os.Exit(1)
}

func report(step string, fields map[string]interface{}) {
	fields["step"] = step
	line, _ := json.Marshal(fields)
	fmt.Println(string(line))
}

type handler struct {
	want   int
	values []string
	done   chan struct{}
}

func (h *handler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *handler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *handler) ConsumeClaim(session sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for message := range claim.Messages() {
		h.values = append(h.values, string(message.Value))
		session.MarkMessage(message, "")
		if len(h.values) == h.want {
			close(h.done)
		}
	}
	return nil
}

func main() {
	if len(os.Args) != 7 {
		fmt.Fprintln(os.Stderr, "usage: sarama_check BROKERS TOPIC GROUP PRODUCER_VERSION COMPRESSION COUNT")
		os.Exit(2)
	}
	// sarama's own log, on standard error, for a failure's report.
	sarama.Logger = log.New(os.Stderr, "[sarama] ", log.Lmicroseconds)
	brokers := strings.Split(os.Args[1], ",")
	topic, group := os.Args[2], os.Args[3]
	producerVersion, err := sarama.ParseKafkaVersion(os.Args[4])
	if err != nil {
		fail("args", err)
	}
	codecs := map[string]sarama.CompressionCodec{"none": sarama.CompressionNone,
		"gzip": sarama.CompressionGZIP, "snappy": sarama.CompressionSnappy, "lz4": sarama.CompressionLZ4}
	codec, known := codecs[os.Args[5]]
	if !known {
		fail("args", fmt.Errorf("compression %s", os.Args[5]))
	}
	count, _ := strconv.Atoi(os.Args[6])

	config := sarama.NewConfig()
	config.Version = producerVersion
	config.Producer.Return.Successes = true
	config.Producer.RequiredAcks = sarama.WaitForAll
	config.Producer.Partitioner = sarama.NewManualPartitioner
	config.Producer.Compression = codec
	// One request for all the messages: a compressed set holds several.
	config.Producer.Flush.Messages = count
	config.Producer.Flush.Frequency = time.Second
	producer, err := sarama.NewSyncProducer(brokers, config)
	if err != nil {
		fail("producer", err)
	}
	var messages []*sarama.ProducerMessage
	for i := 0; i < count; i++ {
		messages = append(messages, &sarama.ProducerMessage{
			Topic: topic, Partition: 0, Key: sarama.StringEncoder(fmt.Sprintf("k%d", i)),
			Value: sarama.StringEncoder(fmt.Sprintf("v%d", i)),
		})
	}
	if err := producer.SendMessages(messages); err != nil {
		fail("produce", err)
	}
	var offsets []int64
	for _, message := range messages {
		offsets = append(offsets, message.Offset)
	}
	producer.Close()
	report("produced", map[string]interface{}{"offsets": offsets})

	// sarama's default version: Fetch v0, message format v0.
	plain, err := sarama.NewConsumer(brokers, sarama.NewConfig())
	if err != nil {
		fail("consumer", err)
	}
	partition, err := plain.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		fail("consume", err)
	}
	var read []string
	for len(read) < count {
		select {
		case message := <-partition.Messages():
			read = append(read, fmt.Sprintf("%d:%s=%s", message.Offset, message.Key, message.Value))
		case err := <-partition.Errors():
			fail("consume", err)
		case <-time.After(20 * time.Second):
			fail("consume", fmt.Errorf("read %d of %d", len(read), count))
		}
	}
	partition.Close()
	plain.Close()
	report("consumed", map[string]interface{}{"records": read})

	groupConfig := sarama.NewConfig()
	groupConfig.Version = sarama.V0_10_2_0
	groupConfig.Consumer.Offsets.Initial = sarama.OffsetOldest
	consumerGroup, err := sarama.NewConsumerGroup(brokers, group, groupConfig)
	if err != nil {
		fail("group", err)
	}
	h := &handler{want: count, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			if err := consumerGroup.Consume(ctx, []string{topic}, h); err != nil {
				errs <- err
				return
			}
		}
	}()
	select {
	case <-h.done:
	case err := <-errs:
		fail("group", err)
	case <-time.After(30 * time.Second):
		fail("group", fmt.Errorf("the group read %d of %d", len(h.values), count))
	}
	cancel()
	// Closing commits what was marked (OffsetCommit v1).
	if err := consumerGroup.Close(); err != nil {
		fail("group close", err)
	}
	report("group", map[string]interface{}{"values": h.values})

	client, err := sarama.NewClient(brokers, groupConfig)
	if err != nil {
		fail("client", err)
	}
	manager, err := sarama.NewOffsetManagerFromClient(group, client)
	if err != nil {
		fail("offsets", err)
	}
	managed, err := manager.ManagePartition(topic, 0)
	if err != nil {
		fail("offsets", err)
	}
	next, _ := managed.NextOffset()
	managed.Close()
	manager.Close()
	client.Close()
	report("committed", map[string]interface{}{"next": next})
}

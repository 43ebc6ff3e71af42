// KafkaJS's `rackId` (KIP-392) against a shared-storage cluster of two writers (racks a
// and b) and a reader (rack r, `broker.roles=reader`): a consumer in rack r is sent by
// each leader to the reader (KafkaJS logs the preferred read replica it takes) and
// reads there every record, at the offsets the leaders gave them. Skipped without
// shared storage (SPOOL_COMPAT_STORAGE=s3). compat/test_read_replicas.py tests the
// same with librdkafka.
const { test, before, after } = require('node:test');
const assert = require('node:assert');
const { Kafka, logLevel } = require('kafkajs');

const { startBrokers, waitFor } = require('./spool');

const SHARED = process.env.SPOOL_COMPAT_STORAGE === 's3';
const RACKS = { 1: 'a', 2: 'b', 3: 'r' };

let cluster;

before(async () => {
  if (!SHARED) return;
  cluster = await startBrokers('readers', [], {
    count: 3,
    nodeSettings: (node) => [`broker.rack=${RACKS[node]}`, ...(node === 3 ? ['broker.roles=reader'] : [])],
  });
});

after(async () => {
  if (cluster) await cluster.stop();
});

test('a KafkaJS consumer with rackId reads every record from the reader of its rack', { skip: !SHARED }, async () => {
  const logged = [];
  const logCreator = () => ({ log }) => logged.push(log.message);
  const kafka = new Kafka({ clientId: 'racks', brokers: [cluster.address], logLevel: logLevel.INFO, logCreator });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: 'racked', numPartitions: 4 }], waitForLeaders: true });
  const metadata = await admin.fetchTopicMetadata({ topics: ['racked'] });
  assert.ok(metadata.topics[0].partitions.every((p) => p.leader === 1 || p.leader === 2), 'the reader leads nothing');
  await admin.disconnect();

  const producer = kafka.producer();
  await producer.connect();
  const produced = new Map();
  for (let partition = 0; partition < 4; partition++) {
    const answers = await producer.send({
      topic: 'racked',
      acks: -1,
      messages: Array.from({ length: 25 }, (_, i) => ({ partition, value: `p${partition}-${i}` })),
    });
    for (let i = 0; i < 25; i++) produced.set(`p${partition}-${i}`, `${partition}:${Number(answers[0].baseOffset) + i}`);
  }
  await producer.disconnect();

  const consumer = kafka.consumer({ groupId: 'racked-readers', rackId: 'r', maxWaitTimeInMs: 200 });
  await consumer.connect();
  await consumer.subscribe({ topic: 'racked', fromBeginning: true });
  const consumed = new Map();
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      consumed.set(message.value.toString(), `${partition}:${message.offset}`);
    },
  });
  await waitFor(() => consumed.size === produced.size, 'every record', 45000);
  await consumer.disconnect();
  assert.deepStrictEqual(new Map([...consumed].sort()), new Map([...produced].sort()));
  assert.ok(logged.some((line) => /Preferred read replica is now 3/.test(line)), logged.slice(-10).join('\n'));
});

// KafkaJS producers through Databus (`spool databus`, docs/databus.md): many
// producers pointed at the agent, unchanged but for `brokers`; their small batches
// reach the cluster merged, every acknowledged record once, at the offset KafkaJS
// was given, in order per partition; a consumer group through the agent reads them.
// compat/test_databus.py tests the same with librdkafka and kafka-python.
const { test, before, after } = require('node:test');
const assert = require('node:assert');
const { spawn } = require('node:child_process');
const { Kafka, logLevel } = require('kafkajs');

const { SPOOL_BIN, freePort, waitForPort, startBrokers } = require('./spool');

let cluster;
let databus;
let busAddress;

before(async () => {
  cluster = await startBrokers('databus');
  const port = await freePort();
  busAddress = `127.0.0.1:${port}`;
  databus = spawn(SPOOL_BIN, ['databus', '--listen', busAddress, '--brokers', cluster.addresses.join(',')],
    { stdio: 'ignore' });
  await waitForPort(port);
});

after(async () => {
  if (databus) {
    const exited = new Promise((resolve) => databus.on('exit', resolve));
    databus.kill('SIGTERM');
    await exited;
  }
  if (cluster) await cluster.stop();
});

test('KafkaJS producers through Databus: every acknowledged record upstream once, in order', async () => {
  const direct = new Kafka({ clientId: 'bus-admin', brokers: [cluster.address], logLevel: logLevel.NOTHING });
  const admin = direct.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: 'bus-js', numPartitions: 2 }], waitForLeaders: true });
  await admin.disconnect();

  const viaBus = new Kafka({ clientId: 'bus-js', brokers: [busAddress], logLevel: logLevel.NOTHING,
    retry: { retries: 10 } });
  const acknowledged = new Map();
  await Promise.all(Array.from({ length: 8 }, async (_, producerIndex) => {
    const producer = viaBus.producer();
    await producer.connect();
    for (let i = 0; i < 40; i++) {
      const partition = i % 2;
      const [answer] = await producer.send({ topic: 'bus-js', acks: -1, messages: [{ partition, value: `js${producerIndex}-${i}` }] });
      acknowledged.set(`js${producerIndex}-${i}`, `${partition}:${answer.baseOffset}`);
    }
    await producer.disconnect();
  }));
  assert.strictEqual(acknowledged.size, 320);

  const consumer = viaBus.consumer({ groupId: 'bus-js-readers', maxWaitTimeInMs: 100 });
  await consumer.connect();
  await consumer.subscribe({ topic: 'bus-js', fromBeginning: true });
  const consumed = new Map();
  const order = new Map();
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      const value = message.value.toString();
      assert.ok(!consumed.has(value), `${value} twice`);
      consumed.set(value, `${partition}:${message.offset}`);
      const [producer, sequence] = value.split('-');
      const key = `${producer}/${partition}`;
      assert.ok((order.get(key) ?? -1) < Number(sequence), `${value} out of order`);
      order.set(key, Number(sequence));
    },
  });
  const deadline = Date.now() + 30000;
  while (consumed.size < 320 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  await consumer.disconnect();
  assert.deepStrictEqual(new Map([...consumed].sort()), new Map([...acknowledged].sort()));
});

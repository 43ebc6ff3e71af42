// KafkaJS against a spool broker started by this test: admin (create, list,
// metadata, offsets), produce (no compression and gzip, keys, headers, null values),
// offsets by timestamp. KafkaJS consumes only through consumer groups (issue 4), so
// what it produced is read back with kcat (librdkafka) and compared.
const { test, before, after } = require('node:test');
const assert = require('node:assert');
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { Kafka, CompressionTypes, logLevel } = require('kafkajs');

const SPOOL_BIN = process.env.SPOOL_BIN || path.resolve(__dirname, '../../target/debug/spool');
let broker;
let address;
let dataDir;

function freePort() {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function waitForPort(port) {
  for (let i = 0; i < 200; i++) {
    const open = await new Promise((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.end();
        resolve(true);
      });
      socket.on('error', () => resolve(false));
    });
    if (open) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('spool did not start');
}

before(async () => {
  const port = await freePort();
  address = `127.0.0.1:${port}`;
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'spool-kafkajs-'));
  broker = spawn(SPOOL_BIN, ['--listen', address, '--data-dir', path.join(dataDir, 'data')], { stdio: 'ignore' });
  await waitForPort(port);
});

after(async () => {
  const exited = new Promise((resolve) => broker.on('exit', resolve));
  broker.kill('SIGTERM');
  const code = await exited;
  fs.rmSync(dataDir, { recursive: true, force: true });
  assert.strictEqual(code, 0, 'clean shutdown');
});

const kafka = () => new Kafka({ clientId: 'spool-compat', brokers: [address], logLevel: logLevel.NOTHING });

test('admin creates and lists topics', async () => {
  const admin = kafka().admin();
  await admin.connect();
  assert.strictEqual(await admin.createTopics({ topics: [{ topic: 'js-topic', numPartitions: 3 }] }), true);
  assert.ok((await admin.listTopics()).includes('js-topic'));
  const metadata = await admin.fetchTopicMetadata({ topics: ['js-topic'] });
  assert.strictEqual(metadata.topics[0].partitions.length, 3);
  await admin.disconnect();
});

for (const [name, codec] of [['none', CompressionTypes.None], ['gzip', CompressionTypes.GZIP]]) {
  test(`produce with ${name}; kcat reads back keys, values and headers in order`, async () => {
    const topic = `js-${name}`;
    const admin = kafka().admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 1 }] });
    const producer = kafka().producer();
    await producer.connect();
    const messages = Array.from({ length: 100 }, (_, i) => ({
      key: `k${i}`,
      value: i % 25 === 3 ? null : `value-${i}`,
      headers: { n: `${i}` },
    }));
    const [result] = await producer.send({ topic, acks: -1, compression: codec, messages });
    assert.strictEqual(result.errorCode, 0);
    await producer.disconnect();

    const offsets = await admin.fetchTopicOffsets(topic);
    assert.deepStrictEqual([offsets[0].low, offsets[0].high], ['0', '100']);
    await admin.disconnect();

    const out = spawnSync('kcat', ['-b', address, '-C', '-t', topic, '-o', 'beginning', '-e', '-f', '%k|%s|%h\n'], {
      encoding: 'utf8',
    });
    assert.strictEqual(out.status, 0, out.stderr);
    const lines = out.stdout.trim().split('\n');
    assert.strictEqual(lines.length, 100);
    lines.forEach((line, i) => {
      const value = i % 25 === 3 ? '' : `value-${i}`;
      assert.strictEqual(line, `k${i}|${value}|n=${i}`);
    });
  });
}

test('offsets by timestamp', async () => {
  const topic = 'js-times';
  const admin = kafka().admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }] });
  const producer = kafka().producer();
  await producer.connect();
  const base = 1700000000000;
  await producer.send({
    topic,
    acks: -1,
    messages: Array.from({ length: 10 }, (_, i) => ({ value: 'v', timestamp: `${base + i * 1000}` })),
  });
  await producer.disconnect();
  const [found] = await admin.fetchTopicOffsetsByTimestamp(topic, base + 4500);
  assert.strictEqual(found.offset, '5');
  await admin.disconnect();
});

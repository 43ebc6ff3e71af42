// KafkaJS against a spool broker started by this test: admin (create, list,
// metadata, offsets), produce (no compression and gzip, keys, headers, null values),
// offsets by timestamp (read back with kcat, librdkafka), and consumer groups: two
// KafkaJS consumers share a topic, commit, and a restarted group resumes; the group
// admin API lists, describes and deletes the group. Delayed records arrive when due;
// a view topic shows only its matching records and KafkaJS moves past its gaps.
const { test, before, after } = require('node:test');
const assert = require('node:assert');
const { spawn, spawnSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Kafka, CompressionTypes, logLevel } = require('kafkajs');

const { SPOOL_BIN, freePort, waitForPort, startBrokers, waitFor } = require('./spool');

let address;
let cluster;

before(async () => {
  cluster = await startBrokers('kafkajs', ['group.initial.rebalance.delay.ms=200',
    'group.min.session.timeout.ms=1000', 'log.cleaner.backoff.ms=200']);
  address = cluster.address;
});

after(async () => {
  await cluster.stop();
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

test('a consumer group of two shares the partitions, commits, and resumes', async () => {
  const admin = kafka().admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: 'js-group', numPartitions: 4 }] });
  const producer = kafka().producer();
  await producer.connect();
  const send = (prefix, n) => producer.send({
    topic: 'js-group',
    messages: Array.from({ length: n }, (_, i) => ({ value: `${prefix}${i}`, partition: i % 4 })),
  });
  await send('a', 80);

  const seen = [];
  const consumers = [];
  const assigned = new Map();
  for (let i = 0; i < 2; i++) {
    const consumer = kafka().consumer({ groupId: 'js', sessionTimeout: 6000, heartbeatInterval: 500 });
    await consumer.connect();
    await consumer.subscribe({ topic: 'js-group', fromBeginning: true });
    consumer.on(consumer.events.GROUP_JOIN, (e) => {
      assigned.set(i, e.payload.memberAssignment['js-group'] || []);
    });
    await consumer.run({ eachMessage: async ({ message }) => { seen.push(message.value.toString()); } });
    consumers.push(consumer);
  }
  await waitFor(() => seen.length >= 80, 'every record');
  await waitFor(() => assigned.size === 2 && [...assigned.values()].every((p) => p.length === 2),
    'two members with two partitions each');
  const all = [...assigned.values()].flat().sort();
  assert.deepStrictEqual(all, [0, 1, 2, 3]);
  assert.deepStrictEqual([...new Set(seen)].length, 80);

  const description = await admin.describeGroups(['js']);
  assert.strictEqual(description.groups[0].state, 'Stable');
  assert.strictEqual(description.groups[0].members.length, 2);
  for (const consumer of consumers) await consumer.disconnect();

  // The group restarts: only what was produced since is read.
  await send('b', 8);
  const again = [];
  const consumer = kafka().consumer({ groupId: 'js', sessionTimeout: 6000 });
  await consumer.connect();
  await consumer.subscribe({ topic: 'js-group', fromBeginning: true });
  await consumer.run({ eachMessage: async ({ message }) => { again.push(message.value.toString()); } });
  await waitFor(() => again.length >= 8, 'records after the restart');
  await new Promise((r) => setTimeout(r, 500));
  assert.deepStrictEqual(again.sort(), Array.from({ length: 8 }, (_, i) => `b${i}`).sort());
  await consumer.disconnect();

  const offsets = await admin.fetchOffsets({ groupId: 'js', topics: ['js-group'] });
  const total = offsets[0].partitions.reduce((sum, p) => sum + Number(p.offset), 0);
  assert.strictEqual(total, 88);
  // Its members left: Empty at once, still a consumer group (not an offsets-only one).
  assert.strictEqual((await admin.describeGroups(['js'])).groups[0].state, 'Empty');
  const listed = (await admin.listGroups()).groups.find((g) => g.groupId === 'js');
  assert.strictEqual(listed.protocolType, 'consumer');
  await admin.deleteGroups(['js']);
  assert.ok(!(await admin.listGroups()).groups.some((g) => g.groupId === 'js'));
  await producer.disconnect();
  await admin.disconnect();
});

test('a compacted topic keeps the latest value of each key and refuses records without one', async () => {
  const admin = kafka().admin();
  await admin.connect();
  await admin.createTopics({
    topics: [{
      topic: 'js-table',
      numPartitions: 1,
      configEntries: [
        { name: 'cleanup.policy', value: 'compact' },
        { name: 'segment.bytes', value: '1024' },
        { name: 'min.cleanable.dirty.ratio', value: '0.01' },
      ],
    }],
  });
  const producer = kafka().producer();
  await producer.connect();
  const latest = new Map();
  for (let v = 0; v < 30; v++) {
    const messages = Array.from({ length: 5 }, (_, k) => ({ key: `k${k}`, value: `k${k}-v${v}-`.repeat(5) }));
    messages.forEach((m) => latest.set(m.key, m.value));
    await producer.send({ topic: 'js-table', messages });
  }
  // Enough after them that their segments close (the active one is never cleaned).
  await producer.send({ topic: 'js-table', messages: Array.from({ length: 20 }, () => ({ key: 'filler', value: 'x'.repeat(100) })) });
  latest.set('filler', 'x'.repeat(100));
  const typeOf = (error) => error.type || (error.cause && error.cause.type) || String(error);
  await assert.rejects(producer.send({ topic: 'js-table', messages: [{ value: 'no key' }] }),
    (error) => /INVALID_RECORD/.test(typeOf(error)));
  await producer.disconnect();

  // Read from the start until a read comes back compacted (the cleaner looks every
  // 200 ms; on local disk it cleans closed segments, in object storage every range
  // but the last).
  let seen = [];
  let compacted = false;
  const consumer = kafka().consumer({ groupId: 'js-table-reader', sessionTimeout: 6000 });
  await consumer.connect();
  await consumer.subscribe({ topic: 'js-table', fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message }) => {
      seen.push([Number(message.offset), message.key.toString(), message.value.toString()]);
      if (Number(message.offset) !== 169) return;
      if (seen.length < 170) {
        compacted = true;
      } else {
        seen = [];
        await new Promise((r) => setTimeout(r, 300));
        consumer.seek({ topic: 'js-table', partition: 0, offset: '0' });
      }
    },
  });
  await waitFor(() => compacted, 'a compacted read');
  await consumer.disconnect();
  await admin.disconnect();
  assert.ok(seen.length < 170, `compacted: ${seen.length} of 170 records`);
  const offsets = seen.map(([offset]) => offset);
  assert.deepStrictEqual(offsets, [...offsets].sort((a, b) => a - b), 'offsets increase, gaps skipped');
  const read = new Map(seen.map(([, key, value]) => [key, value]));
  assert.deepStrictEqual(read, latest);
});

test('a transactional producer commits and aborts; read_committed consumers see only commits', async () => {
  const admin = kafka().admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: 'js-txn', numPartitions: 2 }, { topic: 'js-txn-in', numPartitions: 1 }] });
  const producer = kafka().producer({ transactionalId: 'js-tx', idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const batch = (prefix) => ({
    topic: 'js-txn',
    messages: Array.from({ length: 10 }, (_, i) => ({ value: `${prefix}${i}`, partition: i % 2 })),
  });
  for (const [prefix, commit] of [['c', true], ['a', false], ['d', true]]) {
    const transaction = await producer.transaction();
    await transaction.send(batch(prefix));
    if (commit) await transaction.commit(); else await transaction.abort();
  }
  // Offsets committed in a transaction become the group's when it commits.
  const transaction = await producer.transaction();
  await transaction.send(batch('e'));
  await transaction.sendOffsets({
    consumerGroupId: 'js-txn-group',
    topics: [{ topic: 'js-txn-in', partitions: [{ partition: 0, offset: '42' }] }],
  });
  await transaction.commit();
  await producer.disconnect();

  const committed = Array.from({ length: 10 }, (_, i) => [`c${i}`, `d${i}`, `e${i}`]).flat().sort();
  const read = async (readUncommitted, expected) => {
    const seen = [];
    const consumer = kafka().consumer({ groupId: `js-txn-read-${readUncommitted}`, readUncommitted });
    await consumer.connect();
    await consumer.subscribe({ topic: 'js-txn', fromBeginning: true });
    await consumer.run({ eachMessage: async ({ message }) => { seen.push(message.value.toString()); } });
    await waitFor(() => seen.length >= expected, `${expected} records`);
    await new Promise((r) => setTimeout(r, 500));
    await consumer.disconnect();
    return seen.sort();
  };
  assert.deepStrictEqual(await read(false, 30), committed);
  const everything = [...committed, ...Array.from({ length: 10 }, (_, i) => `a${i}`)].sort();
  assert.deepStrictEqual(await read(true, 40), everything);
  const offsets = await admin.fetchOffsets({ groupId: 'js-txn-group', topics: ['js-txn-in'] });
  assert.strictEqual(offsets[0].partitions[0].offset, '42');
  await admin.disconnect();
});

test('delayed records arrive when due; KafkaJS moves past their holds', async () => {
  const topic = 'js-delayed';
  const admin = kafka().admin();
  await admin.connect();
  await admin.createTopics({
    topics: [{ topic, numPartitions: 1, configEntries: [{ name: 'delivery.delay.enable', value: 'true' }] }],
  });
  const producer = kafka().producer();
  await producer.connect();
  const due = Date.now() + 1500;
  // Held records first: their holds lie before the immediate record in the partition.
  await producer.send({
    topic,
    messages: [0, 1, 2].map((i) => ({
      key: `k${i}`, value: `later-${i}`, partition: 0, headers: { 'spool.deliver-at': `${due + i}` },
    })),
  });
  await producer.send({ topic, messages: [{ value: 'now', partition: 0 }] });

  const seen = [];
  const consumer = kafka().consumer({ groupId: 'js-delayed', sessionTimeout: 6000, heartbeatInterval: 500 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message }) => {
      seen.push({
        value: message.value.toString(),
        at: Date.now(),
        timestamp: Number(message.timestamp),
        from: message.headers['spool.delayed-from'],
      });
    },
  });
  await waitFor(() => seen.length >= 4, 'the immediate and the delayed records');
  await new Promise((r) => setTimeout(r, 300));
  await consumer.disconnect();
  assert.deepStrictEqual(seen.map((m) => m.value), ['now', 'later-0', 'later-1', 'later-2']);
  for (const m of seen.slice(1)) {
    assert.ok(m.at >= due && m.timestamp >= due, `${m.value} arrived early`);
    assert.ok(m.from, 'spool.delayed-from is set');
  }
  await producer.disconnect();
  await admin.disconnect();
});

test('a view shows only matching records; KafkaJS moves past gaps, commits and resumes', async () => {
  const source = 'js-orders';
  const view = 'js-orders-ab';
  const admin = kafka().admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: source, numPartitions: 1 }] });
  await admin.createTopics({
    topics: [{
      topic: view,
      numPartitions: -1,
      configEntries: [{ name: 'view.source.topic', value: source }, { name: 'view.filter', value: 'A || B' }],
    }],
  });
  const producer = kafka().producer();
  await producer.connect();
  const send = (messages) => producer.send({
    topic: source,
    messages: messages.map(([value, tag]) => ({
      value, partition: 0, headers: tag ? { 'spool.tag': tag } : {},
    })),
  });
  // Only non-matching records at first: the consumer's first fetches hold nothing but
  // gaps, and it must move past them.
  for (let i = 0; i < 5; i++) {
    await send(Array.from({ length: 100 }, (_, j) => [`c${i}-${j}`, 'C']));
  }
  const seen = [];
  const start = async () => {
    const consumer = kafka().consumer({
      groupId: 'js-view', sessionTimeout: 6000, heartbeatInterval: 500, maxBytesPerPartition: 2048,
    });
    await consumer.connect();
    await consumer.subscribe({ topic: view, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        seen.push({ value: message.value.toString(), offset: Number(message.offset) });
      },
    });
    return consumer;
  };
  let consumer = await start();
  await new Promise((r) => setTimeout(r, 1500));
  assert.deepStrictEqual(seen, [], 'nothing matches yet');
  // Mixed batches, some ending on a record that does not match, and untagged ones.
  await send([['a0', 'A'], ['c', 'C'], ['b1', 'B'], ['c', 'C']]);
  await send([['u', null], ['u', null]]);
  await send([['c', 'C'], ['a2', 'A']]);
  await waitFor(() => seen.length >= 3, 'the matching records');
  await new Promise((r) => setTimeout(r, 500));
  await consumer.disconnect();
  assert.deepStrictEqual(seen.map((m) => m.value), ['a0', 'b1', 'a2']);
  assert.deepStrictEqual(seen.map((m) => m.offset), [500, 502, 507], "the source's offsets");

  // The group committed; a new consumer of it resumes after a2, past the gaps.
  await send(Array.from({ length: 50 }, (_, j) => [`c-${j}`, 'C']));
  await send([['b3', 'B']]);
  consumer = await start();
  await waitFor(() => seen.length >= 4, 'the record after the resume');
  await new Promise((r) => setTimeout(r, 500));
  await consumer.disconnect();
  assert.deepStrictEqual(seen.map((m) => m.value), ['a0', 'b1', 'a2', 'b3']);

  // Writes to a view are refused, not retried forever.
  await assert.rejects(
    producer.send({ topic: view, messages: [{ value: 'x', partition: 0 }], acks: -1 }),
    /view|INVALID_TOPIC|invalid/i,
  );
  await producer.disconnect();
  await admin.disconnect();
});

// An ES256 key made for the run, and tokens it signs (what an identity provider does).
function signingKey(kid) {
  const { privateKey, publicKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = { ...publicKey.export({ format: 'jwk' }), kid, alg: 'ES256', use: 'sig' };
  const b64 = (value) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const sign = (sub) => {
    const now = Math.floor(Date.now() / 1000);
    const body = `${b64({ alg: 'ES256', kid, typ: 'JWT' })}.${b64({ sub, iat: now, exp: now + 600 })}`;
    const signature = crypto.sign('sha256', Buffer.from(body), { key: privateKey, dsaEncoding: 'ieee-p1363' });
    return `${body}.${signature.toString('base64url')}`;
  };
  return { jwk, sign };
}

test('SASL: SCRAM-SHA-256, PLAIN and OAUTHBEARER over SASL_PLAINTEXT and SASL_SSL; a wrong password or token fails', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spool-kafkajs-sasl-'));
  const cert = path.join(dir, 'cert.pem');
  const key = path.join(dir, 'key.pem');
  const made = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key,
    '-out', cert, '-days', '1', '-subj', '/CN=localhost',
    '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'], { encoding: 'utf8' });
  assert.strictEqual(made.status, 0, made.stderr);
  const idp = signingKey('js-1');
  const jwks = path.join(dir, 'jwks.json');
  fs.writeFileSync(jwks, JSON.stringify({ keys: [idp.jwk] }));
  const [plainPort, saslPort, sslPort] = [await freePort(), await freePort(), await freePort()];
  const broker = spawn(SPOOL_BIN, ['--data-dir', path.join(dir, 'data'), '--admin-listen', 'off',
    '--bootstrap-user', 'carol:carol-secret',
    '--set', `listeners=PLAINTEXT://127.0.0.1:${plainPort},SASL_PLAINTEXT://127.0.0.1:${saslPort},SASL_SSL://127.0.0.1:${sslPort}`,
    '--set', 'sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER',
    '--set', `sasl.oauthbearer.jwks.endpoint.url=${jwks}`,
    '--set', `ssl.certificate.location=${cert}`, '--set', `ssl.key.location=${key}`], { stdio: 'ignore' });
  try {
    for (const port of [plainPort, saslPort, sslPort]) await waitForPort(port);
    // For OAUTHBEARER, `password` is the token.
    const client = (port, mechanism, password, ssl) => new Kafka({
      clientId: 'spool-sasl', brokers: [`127.0.0.1:${port}`], logLevel: logLevel.NOTHING,
      sasl: mechanism === 'oauthbearer'
        ? { mechanism, oauthBearerProvider: async () => ({ value: password }) }
        : { mechanism, username: 'carol', password },
      ssl: ssl ? { ca: [fs.readFileSync(cert)] } : false,
      retry: { retries: 1 },
    });
    const cases = [[saslPort, 'scram-sha-256', false], [saslPort, 'plain', false],
      [sslPort, 'scram-sha-512', true], [sslPort, 'plain', true],
      [saslPort, 'oauthbearer', false], [sslPort, 'oauthbearer', true]];
    for (const [port, mechanism, ssl] of cases) {
      const secret = mechanism === 'oauthbearer' ? idp.sign('carol') : 'carol-secret';
      const kafkaClient = client(port, mechanism, secret, ssl);
      const topic = `js-sasl-${mechanism}-${ssl ? 'ssl' : 'plain'}`;
      const admin = kafkaClient.admin();
      await admin.connect();
      await admin.createTopics({ topics: [{ topic, numPartitions: 1 }] });
      await admin.disconnect();
      const producer = kafkaClient.producer();
      await producer.connect();
      await producer.send({ topic, messages: [{ value: 'a' }, { value: 'b' }] });
      await producer.disconnect();
      const seen = [];
      const consumer = kafkaClient.consumer({ groupId: `g-${topic}`, sessionTimeout: 6000, heartbeatInterval: 500 });
      await consumer.connect();
      await consumer.subscribe({ topic, fromBeginning: true });
      await consumer.run({ eachMessage: async ({ message }) => { seen.push(message.value.toString()); } });
      await waitFor(() => seen.length >= 2, `records over ${mechanism}`);
      await consumer.disconnect();
      assert.deepStrictEqual(seen, ['a', 'b']);
    }
    const wrong = client(saslPort, 'scram-sha-256', 'nope', false).admin();
    await assert.rejects(wrong.connect(), /SASL|authentication|credentials/i);
    const forged = client(saslPort, 'oauthbearer', signingKey('js-1').sign('carol'), false).admin();
    await assert.rejects(forged.connect(), /SASL|authentication|signature/i);
  } finally {
    const exited = new Promise((resolve) => broker.on('exit', resolve));
    broker.kill('SIGTERM');
    await exited;
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

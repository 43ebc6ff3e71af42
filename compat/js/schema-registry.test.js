// The schema registry with KafkaJS's @kafkajs/confluent-schema-registry, a client
// independent of Confluent's: it registers Avro, JSON Schema and Protobuf (.proto
// text) schemas through one broker, KafkaJS produces the records it encodes, and
// they decode through another broker's registry (in a cluster, every broker answers
// the ids any registered). An incompatible Avro change is refused with 409, and a
// topic that validates schema ids refuses KafkaJS's unframed records. The message
// index finds fields of the Avro and Protobuf records it encoded (docs/index.md).
const { test, before, after } = require('node:test');
const assert = require('node:assert');
const { Kafka, logLevel } = require('kafkajs');
const { SchemaRegistry, SchemaType } = require('@kafkajs/confluent-schema-registry');

const { startBrokers, waitFor } = require('./spool');

let cluster;

before(async () => {
  cluster = await startBrokers('kafkajs_registry');
});

after(async () => {
  await cluster.stop();
});

const kafka = () => new Kafka({ clientId: 'spool-registry', brokers: [cluster.address], logLevel: logLevel.NOTHING });
const first = () => new SchemaRegistry({ host: cluster.registryUrls[0] });
const last = () => new SchemaRegistry({ host: cluster.registryUrls[cluster.registryUrls.length - 1] });

// Produces `values` to a new topic and reads them back decoded by the last broker's
// registry.
async function roundTrip(topic, values, topicConfig = []) {
  const admin = kafka().admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 1, configEntries: topicConfig }] });
  await admin.disconnect();
  const producer = kafka().producer();
  await producer.connect();
  await producer.send({ topic, acks: -1, messages: values.map((value) => ({ value })) });
  await producer.disconnect();
  const decoder = last();
  const seen = [];
  const consumer = kafka().consumer({ groupId: `g-${topic}`, sessionTimeout: 6000, heartbeatInterval: 500 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({ eachMessage: async ({ message }) => { seen.push(await decoder.decode(message.value)); } });
  await waitFor(() => seen.length >= values.length, `${values.length} records of ${topic}`);
  await consumer.disconnect();
  return seen;
}

const USER = {
  type: 'record', name: 'User', namespace: 'js',
  fields: [{ name: 'id', type: 'long' }, { name: 'name', type: 'string' }],
};

test('Avro records encoded by one broker\'s ids decode through another\'s', async () => {
  const registry = first();
  const { id } = await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(USER) },
    { subject: 'js-users-value' });
  const users = Array.from({ length: 5 }, (_, i) => ({ id: i, name: `u${i}` }));
  const values = await Promise.all(users.map((user) => registry.encode(id, user)));
  // avsc decodes into instances of the record's class: compared as plain objects.
  const read = await roundTrip('js-users', values);
  assert.deepStrictEqual(read.map((user) => ({ ...user })), users);
  assert.strictEqual(await last().getLatestSchemaId('js-users-value'), id);
  // A field without a default breaks BACKWARD: 409.
  const phone = { ...USER, fields: [...USER.fields, { name: 'phone', type: 'string' }] };
  await assert.rejects(
    registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(phone) }, { subject: 'js-users-value' }),
    (error) => error.status === 409 || /409|incompatible/i.test(String(error.message)),
  );
});

test('JSON Schema and Protobuf schemas register, encode and decode', async () => {
  const registry = first();
  const json = {
    type: 'object', additionalProperties: false, required: ['sku'],
    properties: { sku: { type: 'string' }, count: { type: 'integer' } },
  };
  const jsonId = (await registry.register({ type: SchemaType.JSON, schema: JSON.stringify(json) },
    { subject: 'js-items-value' })).id;
  const items = [{ sku: 'a', count: 1 }, { sku: 'b', count: 2 }];
  const jsonValues = await Promise.all(items.map((item) => registry.encode(jsonId, item)));
  assert.deepStrictEqual(await roundTrip('js-items', jsonValues), items);

  const proto = `syntax = "proto3";
package js;
message Order {
  int64 id = 1;
  string customer = 2;
}`;
  const protoId = (await registry.register({ type: SchemaType.PROTOBUF, schema: proto },
    { subject: 'js-orders-value' })).id;
  const orders = [{ id: 1, customer: 'ada' }, { id: 2, customer: 'bob' }];
  const protoValues = await Promise.all(orders.map((order) => registry.encode(protoId, order)));
  const read = await roundTrip('js-orders', protoValues);
  assert.deepStrictEqual(read.map((order) => ({ id: Number(order.id), customer: order.customer })), orders);
});

test('a validating topic refuses KafkaJS records without a registered id', async () => {
  const registry = first();
  const topic = 'js-validated';
  const { id } = await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(USER) },
    { subject: `${topic}-value` });
  const admin = kafka().admin();
  await admin.connect();
  await admin.createTopics({
    topics: [{ topic, numPartitions: 1, configEntries: [{ name: 'confluent.value.schema.validation', value: 'true' }] }],
  });
  await admin.disconnect();
  const producer = kafka().producer({ retry: { retries: 0 } });
  await producer.connect();
  await assert.rejects(
    producer.send({ topic, acks: -1, messages: [{ value: 'not framed' }] }),
    (error) => error.type === 'INVALID_RECORD' || /INVALID_RECORD|invalid/i.test(String(error.message)),
  );
  const [sent] = await producer.send({ topic, acks: -1, messages: [{ value: await registry.encode(id, { id: 1, name: 'ok' }) }] });
  assert.strictEqual(sent.errorCode, 0);
  await producer.disconnect();
});

// The admin API's search of `topic` for a field's value: the offsets found.
async function search(topic, field, value) {
  const query = new URLSearchParams({ [`field.${field}`]: value, limit: '1000', order: 'oldest' });
  const answer = await fetch(`${cluster.adminUrls[0]}/api/topics/${topic}/messages?${query}`);
  assert.strictEqual(answer.status, 200, await answer.clone().text());
  return (await answer.json()).messages.map((m) => m.offset).sort((a, b) => a - b);
}

test('the message index finds fields of Avro and Protobuf records KafkaJS encoded', async () => {
  const registry = first();
  const order = {
    type: 'record', name: 'Order', namespace: 'js',
    fields: [{ name: 'id', type: 'long' },
      { name: 'buyer', type: { type: 'record', name: 'Buyer', fields: [{ name: 'name', type: 'string' }] } },
      { name: 'coupon', type: ['null', 'string'], default: null }],
  };
  const proto = `syntax = "proto3";
package js;
message Parcel {
  message Dims { int32 width = 1; }
  string carrier = 1;
  Dims dims = 2;
}
message Other { string x = 1; }`;
  const avroId = (await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(order) },
    { subject: 'js-indexed-orders-value' })).id;
  const protoId = (await registry.register({ type: SchemaType.PROTOBUF, schema: proto },
    { subject: 'js-indexed-parcels-value' })).id;
  const orders = Array.from({ length: 60 }, (_, i) => ({
    id: i, buyer: { name: `b${i % 6}` }, coupon: i % 4 === 0 ? `c${i % 3}` : null,
  }));
  const parcels = Array.from({ length: 60 }, (_, i) => ({ carrier: `k${i % 5}`, dims: { width: i % 7 } }));
  const produced = async (topic, fields, values) => {
    const admin = kafka().admin();
    await admin.connect();
    await admin.createTopics({
      topics: [{ topic, numPartitions: 1, configEntries: [{ name: 'index.fields', value: fields }] }],
      waitForLeaders: true,
    });
    await admin.disconnect();
    const producer = kafka().producer();
    await producer.connect();
    await producer.send({ topic, acks: -1, messages: values.map((value) => ({ value })) });
    await producer.disconnect();
  };
  await produced('js-indexed-orders', 'value:$.buyer.name,value:$.coupon,value:$.id',
    await Promise.all(orders.map((o) => registry.encode(avroId, o))));
  // The library writes no message indexes after the schema id (Confluent's own
  // deserializers refuse such values too): the index of the file's first message,
  // one zero byte, is added as Confluent's serializers write it.
  const framed = (value) => Buffer.concat([value.subarray(0, 5), Buffer.from([0]), value.subarray(5)]);
  await produced('js-indexed-parcels', 'value:$.carrier,value:$.dims.width',
    (await Promise.all(parcels.map((p) => registry.encode(protoId, p)))).map(framed));
  const offsets = (values, pick, value) => values.flatMap((v, i) => (pick(v) === value ? [i] : []));
  for (const [field, value, pick] of [
    ['buyer.name', 'b2', (o) => o.buyer.name],
    ['coupon', 'c1', (o) => o.coupon],
    ['id', '17', (o) => String(o.id)],
  ]) {
    assert.deepStrictEqual(await search('js-indexed-orders', field, value), offsets(orders, pick, value), field);
  }
  for (const [field, value, pick] of [
    ['carrier', 'k3', (p) => p.carrier],
    ['dims.width', '4', (p) => String(p.dims.width)],
  ]) {
    assert.deepStrictEqual(await search('js-indexed-parcels', field, value), offsets(parcels, pick, value), field);
  }
});

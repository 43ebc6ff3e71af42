// The brokers the KafkaJS suites run against: spool processes started and stopped by
// each test file, on ports handed out here, with the metadata store and storage that
// scripts/test's mode asks for (SPOOL_COMPAT_METADATA, SPOOL_COMPAT_STORAGE,
// SPOOL_COMPAT_CLUSTER).
const assert = require('node:assert');
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

const SPOOL_BIN = process.env.SPOOL_BIN || path.resolve(__dirname, '../../target/debug/spool');
// With SPOOL_COMPAT_STORAGE=s3, SPOOL_COMPAT_CLUSTER=3 runs a cluster of three spool
// processes (node ids 1, 2, 3) sharing the metadata store and the bucket prefix; the
// clients bootstrap from node 2 and find leaders and coordinators from there.
const CLUSTER = process.env.SPOOL_COMPAT_STORAGE === 's3'
  ? Number(process.env.SPOOL_COMPAT_CLUSTER || '1') : 1;
// With a cluster, SPOOL_COMPAT_READERS=N adds N reader brokers (`broker.roles=reader`)
// after the writers (compat/conftest.py does the same).
const READERS = CLUSTER > 1 ? Number(process.env.SPOOL_COMPAT_READERS || '0') : 0;

// Brokers' ports come from 30000-32767: below the kernel's ephemeral range, where no
// client's outgoing connection takes one between this check and the broker's bind,
// and above the pytest workers' blocks (compat/conftest.py), which run alongside. A
// port is handed out once: a killed broker restarts on its own. Each test file picks
// from its own random places in the block, and a port taken by another is skipped.
const PORT_BLOCK = { first: 30000, count: 2768 };
const portsHandedOut = new Set();

function canBind(port) {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

async function freePort() {
  for (let tries = 0; tries < PORT_BLOCK.count; tries++) {
    const port = PORT_BLOCK.first + Math.floor(Math.random() * PORT_BLOCK.count);
    if (portsHandedOut.has(port) || !(await canBind(port))) continue;
    portsHandedOut.add(port);
    return port;
  }
  throw new Error('no free port left for a broker');
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

// With SPOOL_COMPAT_METADATA=postgres, the broker keeps its metadata in a fresh
// database on the server SPOOL_TEST_POSTGRES_URL names (scripts/test starts one).
function metadataArgs(label) {
  if (process.env.SPOOL_COMPAT_METADATA !== 'postgres') return [];
  const server = process.env.SPOOL_TEST_POSTGRES_URL;
  assert.ok(server, 'SPOOL_COMPAT_METADATA=postgres needs SPOOL_TEST_POSTGRES_URL');
  const name = `${label}_${process.pid}_${Date.now()}`;
  const created = spawnSync('psql', [server, '-qAtc', `CREATE DATABASE ${name}`], { encoding: 'utf8' });
  assert.strictEqual(created.status, 0, created.stderr);
  return ['--metadata-url', `${server.slice(0, server.lastIndexOf('/'))}/${name}`];
}

// With SPOOL_COMPAT_STORAGE=s3, partition data lives under a fresh prefix of the
// bucket SPOOL_TEST_S3_URL names (moto's server, started by scripts/test).
function storageArgs(label) {
  if (process.env.SPOOL_COMPAT_STORAGE !== 's3') return [];
  const bucket = process.env.SPOOL_TEST_S3_URL;
  assert.ok(bucket, 'SPOOL_COMPAT_STORAGE=s3 needs SPOOL_TEST_S3_URL');
  return ['--storage-url', `${bucket.replace(/\/+$/, '')}/${label}-${process.pid}-${Date.now()}`];
}

// Starts the broker (or the cluster of CLUSTER brokers, or of `count`) with
// `settings` (name=value) and each node's own (`nodeSettings(node)`), each with a
// schema registry listener of its own; `label` names its database and bucket prefix.
// Its bootstrap address, every broker's address, each broker's registry URL, and
// stop().
async function startBrokers(label, settings = [], { count, nodeSettings } = {}) {
  // The suite's cluster (its writers, then its readers) unless the test shapes its own.
  const writers = count || CLUSTER;
  count = count || CLUSTER + READERS;
  nodeSettings = nodeSettings || ((node) => (node > writers ? ['broker.roles=reader'] : []));
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `spool-${label}-`));
  const shared = [...metadataArgs(label), ...storageArgs(label), ...settings.flatMap((s) => ['--set', s])];
  const brokers = [];
  const addresses = [];
  const registryUrls = [];
  const adminUrls = [];
  for (let node = 1; node <= count; node++) {
    const port = await freePort();
    const registryPort = await freePort();
    const adminPort = await freePort();
    addresses.push(`127.0.0.1:${port}`);
    registryUrls.push(`http://127.0.0.1:${registryPort}`);
    adminUrls.push(`http://127.0.0.1:${adminPort}`);
    const cluster = count > 1 ? ['--node-id', `${node}`] : [];
    const own = nodeSettings(node).flatMap((s) => ['--set', s]);
    brokers.push(spawn(SPOOL_BIN, ['--listen', addresses[node - 1],
      '--data-dir', path.join(dataDir, `data-${node}`), ...cluster, ...shared, ...own,
      '--set', `schema.registry.listen=127.0.0.1:${registryPort}`,
      '--admin-listen', `127.0.0.1:${adminPort}`], { stdio: 'ignore' }));
    await waitForPort(port);
  }
  const address = addresses[count > 1 ? 1 : 0];
  // Until the bootstrap broker lists them all: topics made next spread over them.
  for (let i = 0; count > 1; i++) {
    const listed = spawnSync('kcat', ['-b', address, '-L', '-J'], { encoding: 'utf8' });
    if (listed.status === 0 && JSON.parse(listed.stdout).brokers.length === count) break;
    assert.ok(i < 200, 'the brokers did not form one cluster');
    await new Promise((r) => setTimeout(r, 50));
  }
  const stop = async () => {
    const codes = await Promise.all(brokers.map((broker) => {
      const exited = new Promise((resolve) => broker.on('exit', resolve));
      broker.kill('SIGTERM');
      return exited;
    }));
    fs.rmSync(dataDir, { recursive: true, force: true });
    assert.deepStrictEqual(codes, brokers.map(() => 0), 'clean shutdown');
  };
  return { address, addresses, registryUrls, adminUrls, stop };
}

async function waitFor(predicate, what, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (predicate()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

module.exports = { SPOOL_BIN, CLUSTER, freePort, waitForPort, startBrokers, waitFor };

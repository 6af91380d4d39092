// kafkajs scenarios of the Shale compatibility suite.
// Usage: node compat.js --version | --bootstrap HOST:PORT --scenario NAME --prefix PREFIX
// Exit code: 0 pass, 77 not applicable, anything else fail.
'use strict'

const assert = require('assert')
const fs = require('fs')
const { Kafka, CompressionTypes, CompressionCodecs, ConfigResourceTypes, logLevel } = require('kafkajs')
const SnappyCodec = require('kafkajs-snappy')

CompressionCodecs[CompressionTypes.Snappy] = SnappyCodec

const NOT_APPLICABLE = 77
const LARGE_VALUE_BYTES = 1000000
const TOO_LARGE_VALUE_BYTES = 1200000

function arg (name) {
  const i = process.argv.indexOf(name)
  return i >= 0 ? process.argv[i + 1] : undefined
}

const bootstrap = arg('--bootstrap')
const prefix = arg('--prefix') || `compat-${Date.now()}`
const topicName = (suffix) => `${prefix}-${suffix}`
const groupName = (suffix) => `${prefix}-${suffix}-group`

class NotApplicable extends Error {}

// Security modes (harness/security.py): COMPAT_SECURITY_JSON's settings as kafkajs's ssl and
// sasl options; none on PLAINTEXT.
const security = process.env.COMPAT_SECURITY_JSON
  ? JSON.parse(fs.readFileSync(process.env.COMPAT_SECURITY_JSON, 'utf8'))
  : null
const AUTH_FAILURE_TIMEOUT_MS = 30000

function securityOptions () {
  if (!security) return {}
  const options = {}
  if (security.security_protocol === 'SSL' || security.security_protocol === 'SASL_SSL') {
    options.ssl = { ca: [fs.readFileSync(security.ca_file, 'utf8')] }
    if (security.cert_file) {
      options.ssl.cert = fs.readFileSync(security.cert_file, 'utf8')
      options.ssl.key = fs.readFileSync(security.key_file, 'utf8')
    }
  }
  if (security.sasl_mechanism) {
    options.sasl = {
      mechanism: security.sasl_mechanism.toLowerCase(),
      username: security.username,
      password: security.password
    }
  }
  return options
}

function kafka (extra = {}) {
  return new Kafka({
    clientId: 'shale-compat',
    brokers: [bootstrap],
    logLevel: logLevel.NOTHING,
    requestTimeout: 20000,
    retry: { retries: 5, initialRetryTime: 200 },
    ...securityOptions(),
    ...extra
  })
}

// auth_failure: the settings are wrong in one way (password, client certificate or truststore);
// connecting an admin client must fail. The line names the kafkajs error class and what it
// carries: the broker's message for SASL, the TLS error code (Node's, or the alert received).
async function authFailure () {
  if (!security) throw new NotApplicable('auth_failure runs in the security modes only')
  const admin = kafka({ retry: { retries: 0 }, connectionTimeout: AUTH_FAILURE_TIMEOUT_MS }).admin()
  let failure = null
  try {
    await admin.connect()
    await admin.describeCluster()
  } catch (err) {
    failure = err
  } finally {
    await admin.disconnect()
  }
  assert.ok(failure, 'connected with the wrong settings')
  console.log('wrong settings refused:', failure.name, failure.message)
  const chain = errorChain(failure)
  const sasl = chain.find((e) => e.name === 'KafkaJSSASLAuthenticationError')
  if (sasl) {
    // "SASL PLAIN authentication failed: <broker's message>"
    console.log(`AUTH_FAILURE: ${sasl.name} (${sasl.message.replace(/^SASL .+? authentication failed: /, '')})`)
    return
  }
  const tlsError = chain.find((e) => e.code && /^(ERR_SSL_|[A-Z_]*CERT|UNABLE_TO_|SELF_SIGNED|DEPTH_ZERO)/.test(e.code))
  assert.ok(tlsError, `an authentication or TLS error: ${chain.map((e) => `${e.name}: ${e.message}`).join(' <- ')}`)
  console.log(`AUTH_FAILURE: ${chain[0].name} (${tlsError.code})`)
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

async function waitUntil (cond, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await cond()) return
    await sleep(100)
  }
  throw new Error(`timed out after ${timeoutMs}ms waiting for ${what}`)
}

async function withAdmin (fn) {
  const admin = kafka().admin()
  await admin.connect()
  try {
    return await fn(admin)
  } finally {
    await admin.disconnect()
  }
}

async function createTopic (admin, topic, numPartitions = 1, configEntries = []) {
  const created = await admin.createTopics({
    topics: [{ topic, numPartitions, replicationFactor: 1, configEntries }],
    waitForLeaders: true
  })
  assert.strictEqual(created, true, `topic ${topic} created`)
}

function errorChain (err) {
  const out = []
  const queue = [err]
  while (queue.length && out.length < 20) {
    const e = queue.shift()
    if (!e || out.includes(e)) continue
    out.push(e)
    queue.push(e.originalError, e.cause, ...(e.errors || []))
  }
  return out
}

async function expectError (promise, type, code, what) {
  try {
    await promise
  } catch (err) {
    const chain = errorChain(err)
    const match = chain.find((e) => e.type === type)
    if (match) {
      if (code !== undefined) assert.strictEqual(match.code, code, `${what}: code`)
      return
    }
    throw new Error(`${what}: expected ${type}, got ${err.name}: ${err.message} ${JSON.stringify(chain.map((e) => e.type))}`)
  }
  throw new Error(`${what}: expected ${type}, but it succeeded`)
}

// The canonical record set (python/common.py make_records); kafkajs keeps headers as an object
// with repeated keys as arrays, so headers are compared key by key.
function makeRecords (n) {
  const base = Date.now() - 60000
  const out = []
  for (let i = 0; i < n; i++) {
    const key = i % 4 === 0 ? null : Buffer.concat([Buffer.from([i, 0, 255, 128]), Buffer.from(`key-${i}`)])
    let value = null
    if (i !== 5) {
      value = Buffer.alloc(1 + i * 37)
      for (let j = 0; j < value.length; j++) value[j] = (i * 7 + j) % 256
    }
    const headers = i % 3 === 0 ? {} : { h1: [Buffer.from(`v${i}`), Buffer.from('dup')], 'h-bin': Buffer.from([0, 1, 2, 255]) }
    out.push({ key, value, headers, timestamp: String(base + i * 1000) })
  }
  return out
}

async function consumeAssigned (topic, count) {
  // kafkajs has no manual assignment: a throwaway group reading from the beginning.
  const consumer = kafka().consumer({ groupId: `${topic}-reader-${Math.random()}`, maxWaitTimeInMs: 200 })
  await consumer.connect()
  const got = []
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true })
    await consumer.run({ autoCommit: false, eachMessage: async ({ partition, message }) => { got.push({ partition, ...message }) } })
    await waitUntil(() => got.length >= count, 30000, `${count} records from ${topic}`)
  } finally {
    await consumer.disconnect()
  }
  return got.sort((a, b) => Number(a.offset) - Number(b.offset))
}

function compareRecords (expected, got, what) {
  assert.strictEqual(got.length, expected.length, `${what}: count`)
  expected.forEach((e, i) => {
    const g = got[i]
    assert.strictEqual(g.offset, String(i), `${what}[${i}] offset`)
    assert.deepStrictEqual(g.key, e.key, `${what}[${i}] key`)
    assert.deepStrictEqual(g.value, e.value, `${what}[${i}] value`)
    assert.strictEqual(g.timestamp, e.timestamp, `${what}[${i}] timestamp`)
    const norm = (h) => Object.fromEntries(Object.entries(h || {}).map(([k, v]) => [k, [].concat(v).map((b) => Buffer.from(b).toString('hex'))]))
    assert.deepStrictEqual(norm(g.headers), norm(e.headers), `${what}[${i}] headers`)
  })
}

// Values of `topic` from the start with a fresh group: until `want` arrived, then a second
// more to catch any record that should not be there.
async function readValues (topic, readUncommitted, want) {
  const consumer = kafka().consumer({ groupId: groupName(`read-${readUncommitted}`), readUncommitted })
  await consumer.connect()
  const got = []
  try {
    await consumer.subscribe({ topic, fromBeginning: true })
    await consumer.run({ eachMessage: async ({ message }) => { got.push(message.value.toString()) } })
    await waitUntil(() => got.length >= want, 30000, `${want} records`).catch(() => {})
    await sleep(1000)
  } finally {
    await consumer.disconnect()
  }
  return got
}

async function transactions () {
  const topic = topicName('t')
  const group = groupName('g')
  await withAdmin(async (admin) => {
    await createTopic(admin, topic)
    const producer = kafka().producer({ transactionalId: `${prefix}-txn`, idempotent: true, maxInFlightRequests: 1 })
    await producer.connect()
    try {
      const txn = async (values, offset, commit) => {
        const t = await producer.transaction()
        await t.send({ topic, messages: values.map((value) => ({ value, partition: 0 })) })
        if (offset !== undefined) {
          await t.sendOffsets({ consumerGroupId: group, topics: [{ topic, partitions: [{ partition: 0, offset: String(offset) }] }] })
        }
        await (commit ? t.commit() : t.abort())
      }
      await txn(['c0', 'c1'], undefined, true) // c0 0, c1 1, COMMIT 2
      await txn(['a0'], undefined, false) // a0 3, ABORT 4
      await txn(['c2'], 5, true) // c2 5, COMMIT 6
      await txn(['a1'], 8, false) // a1 7, ABORT 8
    } finally {
      await producer.disconnect()
    }
    assert.deepStrictEqual(await readValues(topic, false, 3), ['c0', 'c1', 'c2'], 'read_committed values')
    assert.deepStrictEqual(await readValues(topic, true, 5), ['c0', 'c1', 'a0', 'c2', 'a1'], 'read_uncommitted values')
    const offsets = await admin.fetchOffsets({ groupId: group, topics: [topic] })
    assert.strictEqual(offsets[0].partitions[0].offset, '5', 'offset committed in the transaction (the aborted one dropped)')
  })
}

const scenarios = {
  transactions,
  auth_failure: authFailure,
  async metadata () {
    await withAdmin(async (admin) => {
      const cluster = await admin.describeCluster()
      assert.deepStrictEqual(cluster.brokers.map((b) => `${b.nodeId}@${b.host}:${b.port}`), [`1@${bootstrap}`], 'brokers')
      assert.strictEqual(cluster.controller, 1, 'controller')
      assert.ok(cluster.clusterId, 'cluster id')
      const topic = topicName('t')
      await createTopic(admin, topic, 3)
      const md = await admin.fetchTopicMetadata({ topics: [topic] })
      assert.deepStrictEqual(md.topics[0].partitions.map((p) => p.partitionId).sort(), [0, 1, 2], 'partitions')
      assert.ok((await admin.listTopics()).includes(topic), 'listed')
    })
  },

  async topics () {
    await withAdmin(async (admin) => {
      const topic = topicName('t')
      await createTopic(admin, topic, 2, [{ name: 'retention.ms', value: '123456789' }])
      // kafkajs swallows TOPIC_ALREADY_EXISTS and answers false
      assert.strictEqual(await admin.createTopics({ topics: [{ topic, numPartitions: 1 }] }), false, 'duplicate create')
      await admin.createPartitions({ topicPartitions: [{ topic, count: 5 }] })
      await waitUntil(async () => {
        const md = await admin.fetchTopicMetadata({ topics: [topic] })
        return md.topics[0].partitions.length === 5 && md.topics[0].partitions.every((p) => p.leader >= 0)
      }, 20000, '5 partitions')
      await expectError(admin.createPartitions({ topicPartitions: [{ topic, count: 3 }] }), 'INVALID_PARTITIONS', 37, 'shrink')
      await admin.deleteTopics({ topics: [topic], timeout: 20000 })
      await waitUntil(async () => !(await admin.listTopics()).includes(topic), 20000, 'topic gone')
      await expectError(admin.deleteTopics({ topics: [topic] }), 'UNKNOWN_TOPIC_OR_PARTITION', 3, 'delete missing')
    })
  },

  async codecs () {
    const codecs = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP, snappy: CompressionTypes.Snappy }
    await withAdmin(async (admin) => {
      for (const [name, compression] of Object.entries(codecs)) {
        const topic = topicName(name)
        await createTopic(admin, topic)
        const records = makeRecords(12)
        const producer = kafka().producer()
        await producer.connect()
        const res = await producer.send({ topic, compression, messages: records.map((r) => ({ ...r, partition: 0 })) })
        await producer.disconnect()
        assert.strictEqual(res[0].baseOffset, '0', `${name}: base offset`)
        compareRecords(records, await consumeAssigned(topic, records.length), name)
        console.log(name, 'ok')
      }
    })
    console.log('lz4 and zstd need native codec packages and are not covered for kafkajs')
  },

  async large () {
    const topic = topicName('t')
    await withAdmin((admin) => createTopic(admin, topic))
    const value = Buffer.alloc(LARGE_VALUE_BYTES)
    for (let i = 0; i < value.length; i++) value[i] = i % 251
    const records = [{ key: Buffer.from('big'), value, headers: { h: Buffer.from('1') }, timestamp: String(Date.now()) }]
    const producer = kafka().producer()
    await producer.connect()
    await producer.send({ topic, messages: records.map((r) => ({ ...r, partition: 0 })) })
    await producer.disconnect()
    compareRecords(records, await consumeAssigned(topic, 1), 'large')
  },

  async idempotent () {
    const topic = topicName('t')
    await withAdmin((admin) => createTopic(admin, topic))
    const producer = kafka().producer({ idempotent: true, maxInFlightRequests: 1 })
    await producer.connect()
    for (let batch = 0; batch < 5; batch++) {
      const messages = []
      for (let i = 0; i < 60; i++) messages.push({ value: `m-${batch * 60 + i}`, partition: 0 })
      const res = await producer.send({ topic, acks: -1, messages })
      assert.strictEqual(res[0].baseOffset, String(batch * 60), 'base offset of batch')
    }
    await producer.disconnect()
    const got = await consumeAssigned(topic, 300)
    assert.deepStrictEqual(got.map((m) => m.value.toString()), Array.from({ length: 300 }, (_, i) => `m-${i}`), 'once, in order')
  },

  async group () {
    const topic = topicName('t')
    const groupId = groupName('g')
    await withAdmin(async (admin) => {
      await createTopic(admin, topic, 2)
      const producer = kafka().producer()
      await producer.connect()
      for (let p = 0; p < 2; p++) {
        await producer.send({ topic, messages: Array.from({ length: 10 }, (_, i) => ({ value: `p${p}-${i}`, partition: p })) })
      }
      await producer.disconnect()

      const seen = new Set()
      const runOnce = async (limit) => {
        const consumer = kafka().consumer({ groupId, sessionTimeout: 6000, heartbeatInterval: 500, maxWaitTimeInMs: 200 })
        await consumer.connect()
        await consumer.subscribe({ topics: [topic], fromBeginning: true })
        let taken = 0
        const commits = {}
        await consumer.run({
          autoCommit: false,
          eachMessage: async ({ partition, message }) => {
            if (taken >= limit) return
            taken++
            const id = `${partition}:${message.offset}`
            assert.ok(!seen.has(id), `duplicate ${id}`)
            seen.add(id)
            commits[partition] = String(Number(message.offset) + 1)
          }
        })
        await waitUntil(() => taken >= limit, 30000, `${limit} records`)
        await consumer.commitOffsets(Object.entries(commits).map(([partition, offset]) => ({ topic, partition: Number(partition), offset })))
        await consumer.disconnect()
        return taken
      }
      assert.strictEqual(await runOnce(8), 8, 'first run')
      const committed = await admin.fetchOffsets({ groupId, topics: [topic] })
      const sum = committed[0].partitions.reduce((acc, p) => acc + Math.max(0, Number(p.offset)), 0)
      assert.strictEqual(sum, 8, 'committed offsets sum')
      assert.strictEqual(await runOnce(12), 12, 'resumed run')
      assert.strictEqual(seen.size, 20, 'each record once')
      const described = await admin.describeGroups([groupId])
      assert.strictEqual(described.groups[0].state, 'Empty', 'group state after leave')
    })
  },

  async rebalance () {
    const topic = topicName('t')
    const groupId = groupName('g')
    await withAdmin((admin) => createTopic(admin, topic, 4))
    const member = async () => {
      const consumer = kafka().consumer({ groupId, sessionTimeout: 6000, heartbeatInterval: 500, rebalanceTimeout: 10000, maxWaitTimeInMs: 200 })
      const state = { consumer, owned: [] }
      consumer.on(consumer.events.GROUP_JOIN, (e) => { state.owned = (e.payload.memberAssignment[topic] || []).slice().sort() })
      await consumer.connect()
      await consumer.subscribe({ topics: [topic] })
      await consumer.run({ eachMessage: async () => {} })
      return state
    }
    const a = await member()
    await waitUntil(() => a.owned.length === 4, 30000, 'a owns 4')
    const b = await member()
    await waitUntil(() => a.owned.length === 2 && b.owned.length === 2 && new Set([...a.owned, ...b.owned]).size === 4, 40000, '2/2 split')
    await b.consumer.disconnect()
    await waitUntil(() => a.owned.length === 4, 30000, 'a owns 4 after b left')
    await a.consumer.disconnect()
  },

  async offsets_for_times () {
    const topic = topicName('t')
    await withAdmin(async (admin) => {
      await createTopic(admin, topic)
      const records = makeRecords(10)
      const producer = kafka().producer()
      await producer.connect()
      await producer.send({ topic, messages: records.map((r) => ({ ...r, partition: 0 })) })
      await producer.disconnect()
      const base = Number(records[0].timestamp)
      const byTs = await admin.fetchTopicOffsetsByTimestamp(topic, base + 2500)
      assert.deepStrictEqual(byTs, [{ partition: 0, offset: '3' }], 'offset for base+2500')
      const offsets = await admin.fetchTopicOffsets(topic)
      assert.deepStrictEqual(offsets.map((o) => [o.partition, o.low, o.high]), [[0, '0', '10']], 'low/high')
      const after = await admin.fetchTopicOffsetsByTimestamp(topic, base + 10000000)
      assert.deepStrictEqual(after, [{ partition: 0, offset: '10' }], 'after the last record: end offset')
    })
  },

  async configs () {
    const topic = topicName('t')
    await withAdmin(async (admin) => {
      await createTopic(admin, topic)
      const describe = async () => {
        const res = await admin.describeConfigs({ resources: [{ type: ConfigResourceTypes.TOPIC, name: topic }], includeSynonyms: false })
        return Object.fromEntries(res.resources[0].configEntries.map((e) => [e.configName, e]))
      }
      let cfg = await describe()
      assert.strictEqual(cfg['retention.ms'].configValue, '604800000', 'default retention.ms')
      assert.strictEqual(cfg['max.message.bytes'].configValue, '1048588', 'default max.message.bytes')
      assert.strictEqual(cfg['retention.ms'].isDefault, true, 'retention.ms is default')
      await admin.alterConfigs({ resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configEntries: [{ name: 'retention.ms', value: '3600000' }] }] })
      cfg = await describe()
      assert.strictEqual(cfg['retention.ms'].configValue, '3600000', 'altered retention.ms')
      const broker = await admin.describeConfigs({ resources: [{ type: ConfigResourceTypes.BROKER, name: '1' }], includeSynonyms: false })
      const names = broker.resources[0].configEntries.map((e) => e.configName)
      assert.ok(names.includes('num.partitions') || names.includes('log.retention.hours'), 'broker configs')
    })
  },

  async delete_records () {
    const topic = topicName('t')
    await withAdmin(async (admin) => {
      await createTopic(admin, topic)
      const producer = kafka().producer()
      await producer.connect()
      await producer.send({ topic, messages: Array.from({ length: 10 }, (_, i) => ({ value: `r${i}`, partition: 0 })) })
      await producer.disconnect()
      // deleteTopicRecords reads the leader from cached metadata only: load it first
      await admin.fetchTopicMetadata({ topics: [topic] })
      try {
        await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: '4' }] })
      } catch (err) {
        throw new Error(`deleteTopicRecords: ${err.message} ${JSON.stringify(err.partitions || errorChain(err).map((e) => e.message))}`)
      }
      const offsets = await admin.fetchTopicOffsets(topic)
      assert.strictEqual(offsets[0].low, '4', 'low watermark')
    })
    const got = await consumeAssigned(topic, 6)
    assert.deepStrictEqual(got.map((m) => [m.offset, m.value.toString()]), [4, 5, 6, 7, 8, 9].map((i) => [String(i), `r${i}`]), 'remaining')
  },

  async errors () {
    await withAdmin(async (admin) => {
      const missing = topicName('missing')
      await expectError(admin.deleteTopics({ topics: [missing] }), 'UNKNOWN_TOPIC_OR_PARTITION', 3, 'delete missing topic')
      await expectError(admin.fetchTopicMetadata({ topics: [missing] }), 'UNKNOWN_TOPIC_OR_PARTITION', 3, 'metadata of missing topic')
      await expectError(admin.createTopics({ topics: [{ topic: topicName('bad-config'), configEntries: [{ name: 'cleanup.policy', value: 'bogus' }] }] }),
        'INVALID_CONFIG', 40, 'invalid config')
      await expectError(admin.createTopics({ topics: [{ topic: 'bad/name' }] }), 'INVALID_TOPIC_EXCEPTION', 17, 'invalid topic name')
      const topic = topicName('t')
      await createTopic(admin, topic)
      const producer = kafka().producer({ retry: { retries: 0 } })
      await producer.connect()
      try {
        await expectError(producer.send({ topic, messages: [{ value: Buffer.alloc(TOO_LARGE_VALUE_BYTES, 1), partition: 0 }] }),
          'MESSAGE_TOO_LARGE', 10, 'record too large')
      } finally {
        await producer.disconnect()
      }
    })
  }
}

const notSupported = {
  static: 'kafkajs has no static membership (group.instance.id)',
  cooperative: 'kafkajs has no cooperative-sticky assignor'
}

async function main () {
  if (process.argv.includes('--version')) {
    console.log(`kafkajs ${require('kafkajs/package.json').version}`)
    return
  }
  const name = arg('--scenario')
  const fn = scenarios[name]
  if (!fn) {
    console.log(`N/A: ${notSupported[name] || `scenario ${name} is not expressible with this client`}`)
    process.exit(NOT_APPLICABLE)
  }
  const timer = setTimeout(() => { console.log('FAIL: scenario timed out'); process.exit(1) }, 140000)
  try {
    await fn()
  } catch (err) {
    if (err instanceof NotApplicable) {
      console.log(`N/A: ${err.message}`)
      process.exit(NOT_APPLICABLE)
    }
    console.log(err && err.stack ? err.stack : err)
    process.exit(1)
  }
  clearTimeout(timer)
  console.log('PASS')
  process.exit(0)
}

main()

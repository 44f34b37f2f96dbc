#!/usr/bin/env node
/*
 * rocketmq-conformance: the official Node.js 5.x SDK (rocketmq-client-nodejs, pinned in package-lock.json)
 * behind the driver protocol (spec/schemas/driver-protocol.schema.json).
 *
 *   node drivers/nodejs/driver.js --endpoint 127.0.0.1:8081 [--time-scale 0.01] [--epoch S]
 *        [--timestamp-base-ms MS] [--timestamp-scale X]
 *
 * JSON lines: commands on stdin, replies / events / asks on stdout. Commands are served concurrently (every
 * SDK call is a promise); a push consumer's listener and a transaction checker ask the harness and wait for
 * its answer. Topics and groups are set up by the harness (adapters/nodejs.py, through the name server), so
 * this driver only runs SDK clients: producers (normal, FIFO, timed, transactional with a checker), simple
 * consumers and push consumers. Anything else is answered NotApplicable.
 *
 * Time: the SDK runs on the wall clock; spec time = (CLOCK_MONOTONIC seconds - epoch) / time scale, where
 * epoch is a Python time.monotonic() value of the harness (the same clock). A delivery timestamp of spec
 * time T is sent as timestamp-base-ms + T * timestamp-scale, and a duration D (an invisible time) as D * timestamp-scale.
 */
'use strict';

const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');

// the SDK's default logger writes under ~/logs: keep it out of the user's home (os.homedir reads HOME)
process.env.HOME = process.env.RMQC_SDK_HOME || path.join(os.tmpdir(), 'rmqc-sdk-home');

const sdk = require('rocketmq-client-nodejs');
const { TransactionResolution } = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/definition_pb');
const SDK_VERSION = require('rocketmq-client-nodejs/package.json').version;

const PROTOCOL_VERSION = 1;
const PROFILE = 'grpc-5.x';
const CAPABILITIES = ['send.sync', 'delay.timer', 'consumer.simple5x', 'consumer.push5x', 'consumer.push5x.fifo',
  'consumer.filter.tag', 'transactions', 'sdk.nodejs'];
const READY_TIMEOUT_MS = 15000;
const AWAIT_DURATION_MS = 1000;

class NotApplicable extends Error {}

function parseArgs(argv) {
  const args = { endpoint: '127.0.0.1:8081', timeScale: 1, epoch: null, timestampBaseMs: Date.now(), timestampScale: 1 };
  const names = { '--endpoint': 'endpoint', '--time-scale': 'timeScale', '--epoch': 'epoch',
    '--timestamp-base-ms': 'timestampBaseMs', '--timestamp-scale': 'timestampScale' };
  for (let i = 0; i < argv.length; i += 2) {
    const name = names[argv[i]];
    if (!name || argv[i + 1] === undefined) {
      process.stderr.write(`driver.js: unknown or incomplete option ${argv[i]}\n`);
      process.exit(2);
    }
    args[name] = name === 'endpoint' ? argv[i + 1] : Number(argv[i + 1]);
  }
  return args;
}

const ARGS = parseArgs(process.argv.slice(2));
const monotonicS = () => Number(process.hrtime.bigint()) / 1e9;
const EPOCH = ARGS.epoch === null ? monotonicS() : ARGS.epoch;
const nowMs = () => Math.floor((monotonicS() - EPOCH) * 1000 / ARGS.timeScale);
/** A duration the harness gives in spec ms, as the server takes it: a real release's proxy reads wall ms
 * (its clocks compressed through its keys), rmqc serve spec ms; the same factor as a timestamp's. */
const wireMs = (ms) => Math.round(ms * ARGS.timestampScale);
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));
const quietLogger = {
  info() {}, debug() {}, warn() {},
  error(...args) { if (process.env.RMQC_SDK_LOG) process.stderr.write(`${args.map(String).join(' ')}\n`); },
};

// ---- the wire ---------------------------------------------------------------------------------------------

function write(message) {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

let askIds = 0;
const waitingAnswers = new Map();

function ask(session, question) {
  askIds += 1;
  const askId = askIds;
  return new Promise(resolve => {
    waitingAnswers.set(askId, resolve);
    write({ ...question, target: session.name, ask_id: askId });
  });
}

function errorOf(err) {
  if (err instanceof NotApplicable) return { type: 'NotApplicable', message: err.message };
  const code = typeof err.code === 'number' && err.code ? err.code : -1; // -1: the SDK's own checks
  return { type: 'RocketMQError', code, message: `${err.name || 'Error'}: ${err.message}`.slice(0, 2000) };
}

// ---- sessions, clients and events --------------------------------------------------------------------------

const sessions = new Map();
const clients = new Map(); // handle -> { session, kind, client, ... }
let seq = 0;

function emit(session, kind, fields) {
  const row = { run_id: session.runId, target: 'rocketmq-client-nodejs', profile: PROFILE, seq: seq++, ts_ms: nowMs(), kind };
  for (const [ k, v ] of Object.entries(fields)) {
    if (v !== undefined && v !== null) row[k] = v;
  }
  write({ event: row, target: session.name });
}

function firstKey(view) {
  return view.keys && view.keys.length ? view.keys[0] : null;
}

function viewJson(mv, attempt) {
  const properties = {};
  for (const [ k, v ] of mv.properties.entries()) properties[k] = v;
  return {
    msg_id: mv.messageId, topic: mv.topic, key: firstKey(mv), tags: mv.tag || null,
    body: Buffer.from(mv.body).toString('base64'), reconsume_times: Math.max(0, (attempt || 1) - 1),
    delivery_attempt: attempt || 1, queue_id: -1, queue_offset: mv.offset === undefined ? -1 : Number(mv.offset),
    stored_topic: mv.topic, message_group: mv.messageGroup || null, properties, receipt_handle: mv.receiptHandle,
  };
}

function clientOptions(extra) {
  return { endpoints: ARGS.endpoint, namespace: '', sslEnabled: false, requestTimeout: 3000, logger: quietLogger, ...extra };
}

function client(m) {
  const entry = clients.get(m.handle);
  if (!entry) throw new NotApplicable(`no SDK client has the handle ${JSON.stringify(m.handle)}`);
  return entry;
}

function messageOptions(m) {
  const o = m.options || {};
  if (o.delay_level) throw new NotApplicable('the Node.js 5.x SDK has no delay levels (it sends delivery timestamps)');
  if (o.mode && o.mode !== 'sync') throw new NotApplicable(`the Node.js 5.x SDK sends with an awaited promise only, not ${o.mode}`);
  if (o.sdk && o.sdk !== 'nodejs') throw new NotApplicable(`this driver runs the Node.js SDK, not the ${o.sdk} one`);
  if (o.immunity_seconds !== undefined && o.immunity_seconds !== null) {
    throw new NotApplicable('the Node.js 5.x SDK sets no check immunity time');
  }
  const message = { topic: m.topic, body: Buffer.from(m.body || '', 'base64') };
  if (o.key) message.keys = [ o.key ];
  if (o.tags) message.tag = o.tags;
  if (o.message_group) message.messageGroup = o.message_group;
  if (o.properties) message.properties = new Map(Object.entries(o.properties));
  if (o.delivery_timestamp_ms !== undefined && o.delivery_timestamp_ms !== null) {
    message.deliveryTimestamp = new Date(ARGS.timestampBaseMs + o.delivery_timestamp_ms * ARGS.timestampScale);
  }
  return { message, o };
}

async function start(session, handle, kind, sdkClient, extra) {
  try {
    await sdkClient.startup();
  } catch (err) {
    throw new Error(`${kind} ${handle} failed to start: ${err.message}${err.cause ? ` (${err.cause.message || err.cause})` : ''}`);
  }
  clients.set(handle, { session, kind, client: sdkClient, ...extra });
}

// ---- producers ---------------------------------------------------------------------------------------------

function producerEntry(session) {
  return { seqByGroup: new Map(), session };
}

async function cmdProducer(session, m) {
  const o = m.options || {};
  if (o.sdk && o.sdk !== 'nodejs') throw new NotApplicable(`this driver runs the Node.js SDK, not the ${o.sdk} one`);
  await start(session, m.handle, 'producer', new sdk.Producer(clientOptions({})), producerEntry(session));
}

async function cmdTransactionProducer(session, m) {
  const checks = new Map();
  const handle = m.handle;
  const checker = {
    async check(mv) {
      const key = firstKey(mv);
      const n = (checks.get(mv.messageId) || 0) + 1;
      checks.set(mv.messageId, n);
      const common = { topic: mv.topic, msg_id: mv.messageId, key };
      emit(session, 'TX_CHECK', { ...common, detail: { check_times: String(n) } });
      const answer = await ask(session, { ask: 'check', producer: handle, key, n });
      if (answer.state === 'COMMIT_MESSAGE' || answer.state === 'ROLLBACK_MESSAGE') {
        emit(session, 'TX_END', { ...common, detail: { state: answer.state, source: 'SERVER_CHECK' } });
        return answer.state === 'COMMIT_MESSAGE' ? TransactionResolution.COMMIT : TransactionResolution.ROLLBACK;
      }
      return TransactionResolution.TRANSACTION_RESOLUTION_UNSPECIFIED;
    },
  };
  const producer = new sdk.Producer(clientOptions({ topics: m.topics && m.topics.length ? m.topics : undefined, checker }));
  await start(session, handle, 'transaction producer', producer, producerEntry(session));
}

/** The SDK's send; a failure is logged as SEND_FAIL (its code and remark) and thrown on to the reply. */
async function sent(session, fields, send) {
  try {
    return await send();
  } catch (err) {
    const error = errorOf(err);
    emit(session, 'SEND_FAIL', { ...fields, detail: { code: String(error.code), remark: error.message.slice(0, 300) } });
    throw err;
  }
}

async function cmdSend(session, m) {
  const entry = client(m);
  const { message, o } = messageOptions(m);
  const groupSeq = entry.seqByGroup.get(o.message_group || '') || 0;
  entry.seqByGroup.set(o.message_group || '', groupSeq + 1);
  const common = { topic: m.topic, key: o.key, message_group: o.message_group, producer_seq: groupSeq };
  emit(session, 'SEND_INVOKE', { ...common, detail: { mode: 'sync', sdk: 'nodejs' } });
  const receipt = await sent(session, common, () => entry.client.send(message));
  const offset = receipt.offset === undefined ? null : Number(receipt.offset);
  emit(session, 'SEND_OK', { ...common, msg_id: receipt.messageId, queue_offset: offset,
    detail: { mode: 'sync', status: 'SEND_OK', ...(o.tags ? { tags: o.tags } : {}) } });
  return { result: { status: 'SEND_OK', msg_id: receipt.messageId, topic: m.topic, queue_offset: offset } };
}

async function cmdSendInTransaction(session, m) {
  const entry = client(m);
  const { message, o } = messageOptions(m);
  const transaction = entry.client.beginTransaction();
  emit(session, 'SEND_INVOKE', { topic: m.topic, key: o.key, detail: { mode: 'transaction', sdk: 'nodejs' } });
  const receipt = await sent(session, { topic: m.topic, key: o.key }, () => entry.client.send(message, transaction));
  const common = { topic: m.topic, msg_id: receipt.messageId, key: o.key };
  const state = o.local_state || 'UNKNOW';
  emit(session, 'TX_HALF', { ...common, detail: { real_topic: m.topic, transaction_id: receipt.transactionId, local_state: state } });
  if (state === 'COMMIT_MESSAGE') await transaction.commit();
  if (state === 'ROLLBACK_MESSAGE') await transaction.rollback();
  if (state === 'COMMIT_MESSAGE' || state === 'ROLLBACK_MESSAGE') {
    emit(session, 'TX_END', { ...common, detail: { state, source: 'CLIENT' } });
  }
  return { result: { status: 'SEND_OK', msg_id: receipt.messageId, topic: m.topic } };
}

// ---- consumers ---------------------------------------------------------------------------------------------

function subscriptions(m) {
  const expression = (m.options || {}).expression || '*';
  return new Map([ [ m.topic, new sdk.FilterExpression(expression) ] ]);
}

async function cmdSimpleConsumer(session, m) {
  const consumer = new sdk.SimpleConsumer(clientOptions({ consumerGroup: m.group, subscriptions: subscriptions(m),
    awaitDuration: AWAIT_DURATION_MS }));
  await start(session, m.handle, 'simple consumer', consumer, { group: m.group, views: new Map() });
}

async function cmdReceive(session, m) {
  const entry = client(m);
  const messages = await entry.client.receive(m.max_messages || 16, Math.max(0, wireMs(m.invisible_ms ?? 30000)));
  const views = [];
  for (const mv of messages) {
    entry.views.set(mv.receiptHandle, mv);
    const view = viewJson(mv, mv.deliveryAttempt);
    emit(session, 'DELIVER', { topic: mv.topic, group: entry.group, msg_id: mv.messageId, key: view.key,
      message_group: view.message_group, attempt: view.delivery_attempt });
    views.push(view);
  }
  return { views };
}

/** The SDK's message view carrying the view's own receipt handle: the SDK moves a view on to the handle a change
 * of invisible time returned, while a caller may hold on to the old one (RETRY-5X-09). */
function heldView(entry, view) {
  const held = entry.views.get(view.receipt_handle);
  if (!held) throw new NotApplicable(`no message was received with the receipt handle ${view.receipt_handle}`);
  const mv = Object.assign(Object.create(Object.getPrototypeOf(held)), held);
  mv.receiptHandle = view.receipt_handle;
  return mv;
}

async function cmdAck(session, m) {
  const entry = client(m);
  const mv = heldView(entry, m.view);
  try {
    await entry.client.ack(mv);
  } catch (err) {
    return { code: errorOf(err).code };
  }
  emit(session, 'ACK', { topic: mv.topic, group: entry.group, msg_id: mv.messageId, key: firstKey(mv), attempt: mv.deliveryAttempt });
  return { code: 20000 };
}

async function cmdChangeInvisibleDuration(session, m) {
  const entry = client(m);
  const mv = heldView(entry, m.view);
  try {
    await entry.client.changeInvisibleDuration(mv, wireMs(m.invisible_ms));
  } catch (err) {
    return { code: errorOf(err).code, receipt_handle: null };
  }
  entry.views.set(mv.receiptHandle, mv); // the SDK put the new handle on the same message view
  return { code: 20000, receipt_handle: mv.receiptHandle };
}

/** The SDK's PushConsumer with its first receive, acks, nacks and dead-letter forwards recorded. */
class RecordingPushConsumer extends sdk.PushConsumer {
  constructor(options, record) {
    super(options);
    this.record = record;
  }

  async receiveMessage(request, mq, awaitDuration) {
    this.record.receiving();
    return super.receiveMessage(request, mq, awaitDuration);
  }

  async ackMessageViaRpc(endpoints, request, timeout) {
    const response = await super.ackMessageViaRpc(endpoints, request, timeout);
    if (response.getStatus() && response.getStatus().getCode() === 20000) this.record.acked(request);
    return response;
  }

  async changeInvisibleDurationViaRpc(endpoints, request, timeout) {
    const response = await super.changeInvisibleDurationViaRpc(endpoints, request, timeout);
    if (response.getStatus() && response.getStatus().getCode() === 20000) this.record.nacked(request);
    return response;
  }

  async forwardMessageToDeadLetterQueueViaRpc(endpoints, request, timeout) {
    const response = await super.forwardMessageToDeadLetterQueueViaRpc(endpoints, request, timeout);
    if (response.getStatus() && response.getStatus().getCode() === 20000) this.record.forwarded(request);
    return response;
  }
}

async function cmdPushConsumer(session, m) {
  const handle = m.handle;
  const group = m.group;
  const seen = new Map(); // message id -> { key, attempt }
  let ready;
  const receiving = new Promise(resolve => { ready = resolve; });
  const record = {
    receiving: () => ready(),
    acked(request) {
      for (const e of request.getEntriesList()) {
        const s = seen.get(e.getMessageId()) || {};
        emit(session, 'ACK', { topic: request.getTopic().getName(), group, msg_id: e.getMessageId(), key: s.key, attempt: s.attempt });
      }
    },
    nacked(request) {
      const s = seen.get(request.getMessageId()) || {};
      const d = request.getInvisibleDuration();
      const invisibleMs = d ? Math.round((d.getSeconds() * 1000 + Math.floor(d.getNanos() / 1e6)) / ARGS.timestampScale) : 0;
      emit(session, 'RETRY_SCHEDULED', { topic: request.getTopic().getName(), group, msg_id: request.getMessageId(),
        key: s.key, attempt: (s.attempt || 1) + 1, expected_delay_ms: invisibleMs, detail: { via: 'change_invisible_duration' } });
    },
    forwarded(request) {
      const s = seen.get(request.getMessageId()) || {};
      emit(session, 'RETRY_SCHEDULED', { topic: request.getTopic().getName(), group, msg_id: request.getMessageId(),
        key: s.key, attempt: s.attempt, detail: { via: 'forward_to_dlq',
          max_delivery_attempts: String(request.getMaxDeliveryAttempts()) } });
    },
  };
  const listener = {
    async consume(mv) {
      try {
        return await consumed(mv);
      } catch (err) {
        process.stderr.write(`driver.js: listener of ${handle} failed: ${err.stack}\n`);
        throw err;
      }
    },
  };
  async function consumed(mv) {
    {
      const view = viewJson(mv, mv.deliveryAttempt);
      seen.set(mv.messageId, { key: view.key, attempt: view.delivery_attempt });
      emit(session, 'DELIVER', { topic: mv.topic, group, msg_id: mv.messageId, key: view.key,
        message_group: view.message_group, attempt: view.delivery_attempt,
        detail: { reconsume_times: String(view.reconsume_times) } });
      const answer = await ask(session, { ask: 'consume', consumer: handle, view });
      const ok = answer.outcome === 'SUCCESS';
      emit(session, ok ? 'CONSUME_OK' : 'CONSUME_FAIL', { topic: mv.topic, group, msg_id: mv.messageId, key: view.key,
        attempt: view.delivery_attempt, detail: { outcome: String(answer.outcome) } });
      return ok ? sdk.ConsumeResult.SUCCESS : sdk.ConsumeResult.FAILURE;
    }
  }
  const consumer = new RecordingPushConsumer(clientOptions({ consumerGroup: group, subscriptions: subscriptions(m),
    messageListener: listener }), record);
  await start(session, handle, 'push consumer', consumer, { group });
  // ready once its assignment arrived and its first receive is out: before that no delivery time means anything
  const timedOut = await Promise.race([ receiving.then(() => false), sleep(READY_TIMEOUT_MS).then(() => true) ]);
  if (timedOut) throw new Error(`push consumer ${handle} got no queue assignment within ${READY_TIMEOUT_MS} ms`);
}

// ---- commands ----------------------------------------------------------------------------------------------

async function shutdownHandles(handles) {
  await Promise.all(handles.map(async handle => {
    const entry = clients.get(handle);
    clients.delete(handle);
    try {
      await entry.client.shutdown();
    } catch (err) {
      quietLogger.error(`shutdown of ${handle}: ${err.message}`);
    }
  }));
}

const COMMANDS = {
  hello: async () => ({ protocol: PROTOCOL_VERSION, driver: 'rocketmq-client-nodejs', version: SDK_VERSION,
    profiles: [ PROFILE ], clock: 'wall', time_scale: ARGS.timeScale }),
  open: async (_, m) => {
    if (m.profile !== PROFILE) throw new NotApplicable(`the Node.js 5.x SDK runs ${PROFILE}, not ${m.profile}`);
    sessions.set(m.target, { name: m.target, runId: m.run_id || 'run' });
    return { capabilities: CAPABILITIES, version: SDK_VERSION };
  },
  close: async (_, m) => {
    await shutdownHandles([ ...clients.keys() ].filter(h => clients.get(h).session.name === m.target));
    sessions.delete(m.target);
  },
  now: async () => ({ now_ms: nowMs() }),
  advance: async (_, m) => { await sleep(m.ms * ARGS.timeScale); return { now_ms: nowMs() }; },
  settle: async (_, m) => { await sleep(Math.min(m.max_ms, 5000) * ARGS.timeScale); return { now_ms: nowMs() }; },
  step: async (_, m) => { // a wall clock: things happen by themselves; wait a little towards the deadline
    const left = m.deadline_ms - nowMs();
    if (left > 0) await sleep(Math.min(left * ARGS.timeScale, 10));
    return { ran: nowMs() < m.deadline_ms, now_ms: nowMs() };
  },
  producer: cmdProducer,
  transaction_producer: cmdTransactionProducer,
  simple_consumer_5x: cmdSimpleConsumer,
  push_consumer_5x: cmdPushConsumer,
  send: cmdSend,
  send_in_transaction: cmdSendInTransaction,
  receive: cmdReceive,
  ack: cmdAck,
  change_invisible_duration: cmdChangeInvisibleDuration,
  shutdown: async (_, m) => { client(m); await shutdownHandles([ m.handle ]); },
  crash: async (_, m) => { // no termination notice: the timers stop and the connections close
    const entry = client(m);
    clients.delete(m.handle);
    entry.client.rpcClientManager.close();
  },
};

async function serve(m) {
  try {
    const command = COMMANDS[m.cmd];
    if (!command) {
      throw new NotApplicable(`rocketmq-client-nodejs has no ${JSON.stringify(m.cmd)} in this driver (topics and ` +
        'groups are set up by the harness through the name server)');
    }
    const session = m.target === undefined ? null : sessions.get(m.target);
    if (m.target !== undefined && !session && m.cmd !== 'open') throw new NotApplicable(`no open session ${m.target}`);
    write({ reply: m.id, ok: true, ...((await command(session, m)) || {}) });
  } catch (err) {
    write({ reply: m.id, ok: false, error: errorOf(err) });
  }
}

const lines = readline.createInterface({ input: process.stdin });
lines.on('line', line => {
  if (!line.trim()) return;
  let m;
  try {
    m = JSON.parse(line);
  } catch (err) {
    process.stderr.write(`driver.js: not a JSON line: ${line.slice(0, 200)}\n`);
    return;
  }
  if (m.cmd === 'answer') {
    const resolve = waitingAnswers.get(m.ask_id);
    waitingAnswers.delete(m.ask_id);
    if (resolve) resolve(m);
  } else if (m.cmd === 'bye') {
    shutdownHandles([ ...clients.keys() ]).finally(() => {
      write({ reply: m.id, ok: true });
      process.exit(0);
    });
  } else {
    serve(m);
  }
});
lines.on('close', () => process.exit(0));

'use strict';
// DBOS Transact's send/recv next to openwop_interrupt, on one cluster, in one
// Node.js process.  Usage: node bench.js quick|full
//
// The libpq environment (PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE, as
// pg_virtualenv sets them) names the cluster.  The extension is measured in
// PGDATABASE (where the notify relay runs); DBOS gets a system database of its
// own on the same cluster, dbos_bench, dropped and created here.
//
// The figures, each at 1 and 8 clients unless said:
// a. creating a wait: ours create_run + start_node + interrupt (three calls,
//    as bench/scripts/cycle.pgb); DBOS startWorkflow of a workflow that calls
//    DBOS.recv.  Waits per second, counted once they are in place (for DBOS
//    when the recv has recorded its timeout, the workflow running on after
//    startWorkflow returned); latency as the caller waits.
// b. the resolve call: ours resolve_interrupt (one call makes the whole
//    transition: the claim, interrupt.resolved and node.resumed, the run);
//    DBOS.send from outside a workflow (one INSERT into its notifications
//    queue; the transition happens later, inside recv).
// c. resolve to resumed completion: the resolve call, then the waiting side
//    continues and finishes; the client waits for that.
// d. latency to the waiting side (in c): from the resolve call's return to
//    the waiting side holding the decision (DBOS: recv returned; ours: the
//    worker read node.resumed, after the notification).
// e. two resolvers race (1 client each): both answer the same waits in the
//    same order; ours refuses the second with 409, DBOS accepts both sends,
//    recv takes the older message and the other stays unread.
//
// Why the pairing is fair:
// - One client stack for both: the `pg` driver in this process.  Our SQL goes
//   through pg.Client connections, DBOS through its own pool of the same
//   driver (20 connections); every call is a parameterised statement
//   (unnamed, extended protocol), autocommit, on the same durable cluster.
// - "A client" is an async loop that issues one operation and waits for it
//   before the next; 1 and 8 of them run concurrently on both sides.
// - The waiting side runs in this process too: DBOS workflows blocked in
//   DBOS.recv, and for us a worker that listens to its tenant's channel and, told of
//   a resolve, reads the resume value from the log (a pool of 8 connections)
//   and finishes the node and the run.  Both hear of a resolve by
//   LISTEN/NOTIFY; both then make two durable commits (DBOS: recv's consuming
//   transaction and the workflow's completion; us: complete_node and
//   complete_run).
// - The resolve call is measured alone on both sides: nothing acts on it
//   while it is timed.  For DBOS the send goes to a workflow that is waiting,
//   on a topic its recv does not wait for: the call is the same INSERT, foreign
//   key probe and trigger NOTIFY, but no recv wakes and competes for the two
//   cores.  Our worker likewise ignores those notifications.
// - DBOS's recv polls the database every pollingIntervalMs as a fallback to
//   LISTEN (10 s by default, one query per waiting workflow); it is raised to
//   10 minutes here so that hundreds of idle waits do not load the cluster
//   while the other figures run.  That favours DBOS, as does its database's
//   "C" collation (our identifier columns are "C" too).
// - One CHECKPOINT before each side's turn; the sides take turns, and which
//   goes first alternates from one client count and round to the next.  The
//   resolve call, the figure closest between the two, is timed in
//   alternating blocks of both sides instead (resolveCall below).
//
// Output: lines "result,IMPL,FIGURE,CLIENTS,METRIC,VALUE" on stdout (IMPL is
// ours or dbos; METRIC rate per s, p50_ms, p99_ms, wal_bytes_per_op, ...),
// each the median of the rounds.  Progress goes to stderr.

const { DBOS } = require('@dbos-inc/dbos-sdk');
const pg = require('pg');

const mode = process.argv[2] || 'quick';
const P = mode === 'full'
  ? { rounds: 3, resolve1: 2400, resolve8: 400, done1: 300, done8: 60, race: 300 }
  : { rounds: 1, resolve1: 200, resolve8: 40, done1: 60, done8: 15, race: 60 };
const DBOS_DB = 'dbos_bench';
const TOPIC = 'decision';        // what the waiting side waits for
const IDLE_TOPIC = 'unheard';    // a topic nobody waits for (the resolve call alone)
const REQUEST = JSON.stringify({
  kind: 'approval',
  data: { artifactId: 'expense-412', artifactType: 'expense', title: 'Approve 412.50 for jo', actions: ['accept', 'reject'] },
});
const ACCEPT = JSON.stringify({ action: 'accept' });
const tag = Date.now().toString(36);

const say = (m) => process.stderr.write(`${new Date().toISOString().slice(11, 19)}  dbos: ${m}\n`);
const nowMs = () => Number(process.hrtime.bigint()) / 1e6;
function quantile(values, p) {      // as bench.sh: the value at rank round(n * p) of the sorted values
  const v = [...values].sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  return v[Math.min(v.length, Math.max(1, Math.round(v.length * p))) - 1];
}
const median = (values) => quantile(values, 0.5);

// C concurrent clients, each running op(client, i) for i = 1..per in order
async function clients(C, per, op) {
  const lat = [];
  const t0 = nowMs();
  await Promise.all(Array.from({ length: C }, async (_, c) => {
    for (let i = 1; i <= per; i++) {
      const s = nowMs();
      await op(c, i);
      lat.push(nowMs() - s);
    }
  }));
  return { elapsed: nowMs() - t0, lat };
}

// ---------------------------------------------------------------- the cluster
let admin;        // PGDATABASE: WAL positions
let conns = [];   // PGDATABASE: one connection per client of ours
let dbosSql;      // dbos_bench: counts and checks, never timed
async function walLsn() {
  return (await admin.query('SELECT pg_current_wal_lsn()::text AS l')).rows[0].l;
}
async function walSince(lsn) {
  return Number((await admin.query('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn) AS d', [lsn])).rows[0].d);
}

// ---------------------------------------------------------------- ours
const runId = (ph, c, i) => `default/dbospair-${tag}-${ph}-${c}-${String(i).padStart(6, '0')}`;
const ours = {
  async createWait(c, r) {
    const q = conns[c];
    await q.query("SELECT openwop.create_run('bench', jsonb_build_object('runId', $1::text))", [r]);
    await q.query("SELECT openwop.start_node($1, 'gate')", [r]);
    await q.query("SELECT openwop.interrupt($1, 'gate', $2::jsonb)", [r, REQUEST]);
  },
  async resolve(c, r) {
    await conns[c].query("SELECT openwop.resolve_interrupt($1, 'gate', $2::jsonb)", [r, ACCEPT]);
  },
};

// The waiting side: told of a resolve on its tenant's channel, it reads the resume
// value from the log (README: a listener reads openwop.events from the run's
// sequence) and continues: complete_node, complete_run.
const worker = {
  listen: null,
  pool: null,
  waiting: new Map(),   // runId -> { heard, resumed, done: promise resolver }
  async start() {
    this.pool = new pg.Pool({ max: 8 });
    this.listen = new pg.Client();
    await this.listen.connect();
    this.listen.on('notification', (n) => {
      const heard = nowMs();
      let p;
      try { p = JSON.parse(n.payload); } catch { return; }
      const w = this.waiting.get(p.runId);
      if (!w || w.heard !== undefined) return;
      w.heard = heard;
      this.resume(p.runId, p.fromSequence, w).catch((e) => w.fail(e));
    });
    // the channel of the runs' tenant (default), which openwop.listen() names
    await this.listen.query('SELECT openwop.listen()');
  },
  expect(r) {          // a promise of the run's completion; the worker acts on runs it expects only
    return new Promise((resolve, reject) => {
      this.waiting.set(r, { heard: undefined, resumed: undefined, done: resolve, fail: reject });
    });
  },
  async resume(r, from, w) {
    // a production worker reads from the last sequence it saw; the read is the same
    const ev = (await this.pool.query('SELECT e FROM openwop.events($1, $2) e', [r, from - 1])).rows;
    const resumed = ev.map((x) => x.e).find((e) => e.type === 'node.resumed');
    if (!resumed) throw new Error(`no node.resumed for ${r}`);
    w.resumed = nowMs();
    const value = resumed.payload.resumeValue;
    await this.pool.query("SELECT openwop.complete_node($1, 'gate', $2::jsonb)", [r, JSON.stringify({ approved: value.action === 'accept' })]);
    await this.pool.query('SELECT openwop.complete_run($1, $2::jsonb)', [r, JSON.stringify({ decision: value })]);
    this.waiting.delete(r);
    w.done({ heard: w.heard, resumed: w.resumed, value });
  },
  async stop() {
    await this.listen.end();
    await this.pool.end();
  },
};

// ---------------------------------------------------------------- DBOS
const wfId = (ph, c, i) => `dbospair-${tag}-${ph}-${c}-${String(i).padStart(6, '0')}`;
const received = new Map();   // workflowID -> when recv returned
async function waitForDecision() {
  const m = await DBOS.recv(TOPIC, { timeoutSeconds: 86400, pollingIntervalMs: 600000 });
  received.set(DBOS.workflowID, nowMs());
  return m;
}
const waiter = DBOS.registerWorkflow(waitForDecision, { name: 'waitForDecision' });
const handles = new Map();    // workflowID -> handle
const dbos = {
  async createWait(c, id) {
    handles.set(id, await DBOS.startWorkflow(waiter, { workflowID: id })());
  },
  // the waits of phase ph are in place when every workflow's recv has recorded its timeout
  async waitsInPlace(ph, n) {
    const prefix = `dbospair-${tag}-${ph}-`;
    for (;;) {
      const k = Number((await dbosSql.query(
        "SELECT count(*) AS k FROM dbos.operation_outputs WHERE workflow_uuid LIKE $1 AND function_name = 'DBOS.sleep'",
        [prefix + '%'])).rows[0].k);
      if (k >= n) return;
      await new Promise((r) => setTimeout(r, 10));
    }
  },
  async send(id, topic, message) {
    await DBOS.send(id, message, topic);
  },
};

// ---------------------------------------------------------------- figures
const results = [];  // { impl, figure, clients, metric, value, round }
function put(round, impl, figure, clients, metric, value) {
  results.push({ round, impl, figure, clients, metric, value });
}

// a. the rate counts a wait once it is in place: for us when interrupt()
// returned, for DBOS when the workflow's recv has recorded its timeout (the
// workflow runs on after startWorkflow returns: DBOS's caller does not wait
// for it, so the rate takes the time until the last one is in place).  The
// latency is what the caller waits: our three calls, DBOS's startWorkflow.
async function createWaits(impl, ph, C, per) {   // returns the ids, per client
  const ids = Array.from({ length: C }, (_, c) => Array.from({ length: per }, (_, i) => (impl === 'ours' ? runId : wfId)(ph, c, i + 1)));
  const lsn = await walLsn();
  const t0 = nowMs();
  const r = await clients(C, per, (c, i) => (impl === 'ours' ? ours : dbos).createWait(c, ids[c][i - 1]));
  let elapsed = r.elapsed;
  if (impl === 'dbos') {
    await dbos.waitsInPlace(ph, C * per);
    elapsed = nowMs() - t0;
  }
  const wal = await walSince(lsn);
  return { ids, elapsed, lat: r.lat, wal };
}

// One client count, both sides, in the given order: a. creating the waits;
// b. the resolve call on the first of them, the two sides in alternating
// blocks; then, side by side in turn, c. (and d.) resolve to resumed
// completion on the next ones and, at 1 client, e. the race on the last ones.
async function measureAt(round, order, C) {
  const nb = C === 1 ? P.resolve1 : P.resolve8;
  const nc = C === 1 ? P.done1 : P.done8;
  const nr = C === 1 ? P.race : 0;
  const per = nb + nc + nr;
  const ph = `r${round}c${C}`;
  const ids = {};
  for (const impl of order) {
    await settle();
    const a = await createWaits(impl, ph, C, per);
    put(round, impl, 'wait', C, 'rate', (C * per) / (a.elapsed / 1000));
    put(round, impl, 'wait', C, 'p50_ms', quantile(a.lat, 0.5));
    put(round, impl, 'wait', C, 'p99_ms', quantile(a.lat, 0.99));
    put(round, impl, 'wait', C, 'wal_bytes_per_op', a.wal / (C * per));
    ids[impl] = a.ids;
  }
  await settle();
  await resolveCall(round, order, C, Object.fromEntries(order.map((impl) => [impl, ids[impl].map((l) => l.slice(0, nb))])));
  for (const impl of order) {
    await settle();
    await resolveToDone(round, impl, C, ids[impl].map((l) => l.slice(nb, nb + nc)));
    if (nr > 0) await race(round, impl, ids[impl][0].slice(nb + nc));
  }
}

// b. the resolve call, alone: for DBOS on a topic the waiting recv does not
// wait for, so the waits stay blocked in recv; ours stay resolved but not
// continued (the worker does not expect them): neither side acts on them.
// The speed of this machine's cores drifts from one second to the next by
// more than the two sides differ, so the two are not timed seconds apart:
// they take turns in blocks of BLOCK calls per client, which side goes first
// alternating from block to block, and each side's rate is its calls over
// the time of its own blocks.
const BLOCK = 25;
async function resolveCall(round, order, C, ids) {
  const per = ids[order[0]][0].length;
  const t = {}, lat = {}, wal = {};
  for (const impl of order) { t[impl] = 0; lat[impl] = []; wal[impl] = 0; }
  for (let from = 0, k = 0; from < per; from += BLOCK, k++) {
    const n = Math.min(BLOCK, per - from);
    for (const impl of k % 2 === 0 ? order : [...order].reverse()) {
      const lsn = await walLsn();
      const b = await clients(C, n, (c, i) => (impl === 'ours'
        ? ours.resolve(c, ids.ours[c][from + i - 1])
        : dbos.send(ids.dbos[c][from + i - 1], IDLE_TOPIC, { action: 'accept' })));
      wal[impl] += await walSince(lsn);
      t[impl] += b.elapsed;
      lat[impl].push(...b.lat);
    }
  }
  for (const impl of order) {
    put(round, impl, 'resolve', C, 'rate', (C * per) / (t[impl] / 1000));
    put(round, impl, 'resolve', C, 'p50_ms', quantile(lat[impl], 0.5));
    put(round, impl, 'resolve', C, 'p99_ms', quantile(lat[impl], 0.99));
    put(round, impl, 'resolve', C, 'wal_bytes_per_op', wal[impl] / (C * per));
  }
}

// c. resolve to resumed completion, and d. latency to the waiting side: from
// the resolve call's return to the waiting side holding the decision
async function resolveToDone(round, impl, C, ids) {
  const per = ids[0].length;
  const toWaiter = [], toHeard = [];
  const lsn = await walLsn();
  const r = await clients(C, per, async (c, i) => {
    const id = ids[c][i - 1];
    if (impl === 'ours') {
      const done = worker.expect(id);
      await ours.resolve(c, id);
      const sent = nowMs();
      const w = await done;
      toHeard.push(Math.max(0, w.heard - sent));   // 0: no later than the reply
      toWaiter.push(w.resumed - sent);
    } else {
      await dbos.send(id, TOPIC, { action: 'accept' });
      const sent = nowMs();
      await handles.get(id).getResult();
      toWaiter.push(received.get(id) - sent);
    }
  });
  const wal = await walSince(lsn);
  put(round, impl, 'done', C, 'rate', (C * per) / (r.elapsed / 1000));
  put(round, impl, 'done', C, 'p50_ms', quantile(r.lat, 0.5));
  put(round, impl, 'done', C, 'p99_ms', quantile(r.lat, 0.99));
  put(round, impl, 'done', C, 'wal_bytes_per_op', wal / (C * per));
  put(round, impl, 'to_waiter', C, 'p50_ms', quantile(toWaiter, 0.5));
  put(round, impl, 'to_waiter', C, 'p99_ms', quantile(toWaiter, 0.99));
  if (impl === 'ours') {
    // the notification alone (it may arrive before the resolve's own reply)
    put(round, impl, 'to_notification', C, 'p50_ms', quantile(toHeard, 0.5));
    put(round, impl, 'to_notification', C, 'p99_ms', quantile(toHeard, 0.99));
  }
}

// e. two resolvers race: two clients answer the same waits, in the same
// order; the waiting side is live on both sides
async function race(round, impl, waits) {
  const M = waits.length;
  const done = impl === 'ours' ? waits.map((id) => worker.expect(id)) : waits.map((id) => handles.get(id).getResult());
  let accepted = 0, refused = 0;
  const r = await clients(2, M, async (c, i) => {
    const id = waits[i - 1];
    if (impl === 'ours') {
      try {
        await conns[c].query("SELECT openwop.resolve_interrupt($1, 'gate', $2::jsonb)", [id, ACCEPT]);
        accepted++;
      } catch (e) {
        if (e.code !== 'PT409') throw e;   // interrupt_already_resolved: the loser is told
        refused++;
      }
    } else {
      await dbos.send(id, TOPIC, { action: 'accept', by: c });
      accepted++;
    }
  });
  await Promise.all(done);
  let unread;
  if (impl === 'ours') {
    const k = await conns[0].query(
      "SELECT count(*) AS resolved FROM openwop.events WHERE run_id = ANY($1) AND type = 'interrupt.resolved'", [waits]);
    if (Number(k.rows[0].resolved) !== M) throw new Error(`race: ${k.rows[0].resolved} interrupt.resolved events for ${M} waits`);
    unread = 0;   // the loser was refused; nothing of its answer waits anywhere
  } else {
    // recv took the oldest message of each wait; the other sender's stays in the queue
    const k = await dbosSql.query('SELECT count(*) FILTER (WHERE NOT consumed) AS unread FROM dbos.notifications WHERE destination_uuid = ANY($1)', [waits]);
    unread = Number(k.rows[0].unread);
  }
  put(round, impl, 'race', 2, 'rate', (2 * M) / (r.elapsed / 1000));
  put(round, impl, 'race', 2, 'accepted_per_wait', accepted / M);
  put(round, impl, 'race', 2, 'refused_per_wait', refused / M);
  put(round, impl, 'race', 2, 'unread_per_wait', unread / M);
}

async function settle() {    // as bench.sh before each run, once per side and client count
  await admin.query('CHECKPOINT');
}

// ---------------------------------------------------------------- main
function dbosVersion() {   // the package does not export its package.json
  const fs = require('fs');
  const path = require('path');
  return JSON.parse(fs.readFileSync(path.join(__dirname, 'node_modules', '@dbos-inc', 'dbos-sdk', 'package.json'), 'utf8')).version;
}
function sysDbUrl() {
  const u = new URL('postgresql://localhost');
  const host = process.env.PGHOST || 'localhost';
  if (host.startsWith('/')) u.searchParams.set('host', host); else u.hostname = host;
  if (process.env.PGPORT) u.port = process.env.PGPORT;
  u.username = encodeURIComponent(process.env.PGUSER || 'postgres');
  if (process.env.PGPASSWORD) u.password = encodeURIComponent(process.env.PGPASSWORD);
  u.pathname = '/' + DBOS_DB;
  return u.toString();
}

async function main() {
  admin = new pg.Client();
  await admin.connect();
  const v = (await admin.query("SELECT extversion FROM pg_extension WHERE extname = 'openwop_interrupt'")).rows;
  if (v.length !== 1) throw new Error(`the extension is not installed in database ${admin.database}`);
  const relay = (await admin.query("SELECT count(*) AS k FROM openwop.workers WHERE database = current_database() AND serving")).rows[0].k;
  if (Number(relay) !== 1) throw new Error(`no openwop worker (the notify relay) serves database ${admin.database}`);
  // DBOS's own system database on the same cluster; "C" like our identifier columns
  await admin.query(`DROP DATABASE IF EXISTS ${DBOS_DB} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${DBOS_DB} TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C'`);
  for (let c = 0; c < 8; c++) {
    const q = new pg.Client();
    await q.connect();
    conns.push(q);
  }
  await worker.start();

  DBOS.setConfig({ name: 'openwop-bench', systemDatabaseUrl: sysDbUrl(), systemDatabasePoolSize: 20, logLevel: 'warn' });
  await DBOS.launch();
  dbosSql = new pg.Client({ database: DBOS_DB });
  await dbosSql.connect();
  say(`DBOS Transact ${dbosVersion()}, system database ${DBOS_DB}; ${mode}: ${P.rounds} round(s)`);

  // untimed: every connection of ours has prepared its statements, and the
  // code of both sides has run, before the first figure
  for (const impl of ['ours', 'dbos']) {
    const w = await createWaits(impl, 'warm', 8, 3);
    await clients(8, 3, (c, i) => (impl === 'ours' ? ours.resolve(c, w.ids[c][i - 1]) : dbos.send(w.ids[c][i - 1], IDLE_TOPIC, { action: 'accept' })));
  }
  for (let round = 1; round <= P.rounds; round++) {
    for (const C of [1, 8]) {
      // alternate which side goes first
      const order = (round + C) % 2 === 0 ? ['ours', 'dbos'] : ['dbos', 'ours'];
      say(`round ${round}, ${C} client${C === 1 ? '' : 's'}: ${order.join(' then ')}`);
      await measureAt(round, order, C);
      for (const impl of order) {
        const got = (f, c) => results.find((x) => x.round === round && x.impl === impl && x.figure === f && x.clients === c && x.metric === 'rate');
        say(`  ${impl === 'ours' ? 'openwop_interrupt' : 'DBOS'} per s: waits ${got('wait', C).value.toFixed(0)}, resolve calls ${got('resolve', C).value.toFixed(0)}, resolved to completion ${got('done', C).value.toFixed(0)}` +
          (C === 1 ? `, race attempts ${got('race', 2).value.toFixed(0)}` : ''));
      }
    }
  }

  // medians of the rounds
  const keys = new Map();
  for (const x of results) {
    const k = [x.impl, x.figure, x.clients, x.metric].join(',');
    if (!keys.has(k)) keys.set(k, []);
    keys.get(k).push(x.value);
  }
  for (const [k, vals] of keys) {
    const m = median(vals);
    process.stdout.write(`result,${k},${Number.isInteger(m) ? m : m.toFixed(3)}\n`);
  }

  await dbosSql.end();
  await worker.stop();
  for (const q of conns) await q.end();
  await admin.end();
}

// The waits of the resolve-call figures are still blocked in recv: DBOS.shutdown
// would list them all, so the process just ends (the next run drops dbos_bench).
main().then(() => process.exit(0), (e) => {
  process.stderr.write(`dbos bench failed: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});

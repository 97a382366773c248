'use strict';
// The program lmc-runtime runs inside node: a persistent, REPL-like evaluator.
//
//   node --expose-internals runner.js EVENTS_FIFO CONTROL_FIFO
//
// Requests come as JSON lines on CONTROL_FIFO: {"id": 1, "code": "...", "lines": true}, with
// "env": {NAME: VALUE} for variables set in process.env for that run only (restored once it is
// over, however it ended), or {"stop": 1}: stop run 1 if it is the one going on.
// Everything goes back as JSON lines on EVENTS_FIFO, in the order it happened:
//   {"k":"r","pid":N}                  ready
//   {"k":"o"|"e","d":TEXT}             stdout / stderr (console.log, console.error, writes)
//   {"k":"v","d":TEXT}                 the value of the code's last expression, as stdout
//   {"k":"e","n":NAME,"d":TEXT}        stderr that reports an error (the trace of what was thrown),
//                                      NAME its class as in "d" events; "n" comes before "d"
//   {"k":"l","id":ID,"n":LINE}         the top-level statement now running (1-based)
//   {"k":"d","id":ID,"s":STATUS,"p":B,"c":N,"n":NAME}
//                                      done: ok | error | interrupted; p: async work may remain;
//                                      c: this process's count of runs; n: the error's class
//   {"k":"x","c":CODE}                 the process is exiting (process.exit() or the end)
// Both FIFOs are opened here, so they carry O_CLOEXEC and no child process inherits them;
// the code's own stdout and stderr are left alone for it, and its process.stdin reads fd 0
// (stdin.js).
//
// The code is parsed (node's own acorn) and run one top-level statement at a time as a
// vm.Script in this context (cells.js): const, let and class declarations live on in the
// global lexical scope, function declarations and vars are hoisted first, and a statement
// with a top-level await goes through node's own REPL rewrite. Nothing is added to the code.
// `import` declarations become global bindings (imports.js); `export` is dropped from
// declarations. With LMC_NODE_LANGUAGE=typescript, each cell is TypeScript, transpiled
// first (typescript.js, the compiler from LMC_TYPESCRIPT or this folder's node_modules).

const fs = require('fs');
const net = require('net');
const path = require('path');
const util = require('util');
const Module = require('module');
const { installStdin } = require('./stdin.js');
const { describeError, errorName, isInterrupt } = require('./errors.js');
const { runCell, stopCell } = require('./cells.js');
const { drainSigint } = require('./sigint.js');

const stringify = JSON.stringify;
const parseJSON = JSON.parse;
const writeSync = fs.writeSync;
const inspect = util.inspect;

const [eventsPath, controlPath] = process.argv.slice(2);
const language = process.env.LMC_NODE_LANGUAGE || 'javascript';
const compiler =
  language === 'typescript'
    ? require('./typescript.js').createCompiler(process.env.LMC_TYPESCRIPT)
    : null;
delete process.env.LMC_NODE_LANGUAGE;
delete process.env.LMC_TYPESCRIPT;
const eventsFd = fs.openSync(eventsPath, 'w');
const controlFd = fs.openSync(controlPath, 'r');

function emit(event) {
  const data = Buffer.from(stringify(event) + '\n', 'utf8');
  let offset = 0;
  while (offset < data.length) {
    offset += writeSync(eventsFd, data, offset, data.length - offset);
  }
}

function capture(stream, kind) {
  stream.write = function write(chunk, encoding, callback) {
    if (typeof encoding === 'function') callback = encoding;
    const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    if (text.length > 0) emit({ k: kind, d: text });
    if (typeof callback === 'function') process.nextTick(callback);
    return true;
  };
}
capture(process.stdout, 'o');
capture(process.stderr, 'e');
const stdin = installStdin(() => {
  if (current !== null && !current.stopped && !current.done) current.stop(STUCK);
});

globalThis.require = Module.createRequire(path.join(process.cwd(), '[lmc-node]'));

// -- errors -------------------------------------------------------------------------------

function failed(state, error) {
  if (state === null) return;
  state.status = 'error';
  if (state.error === undefined) state.error = errorName(error);
}

// What was thrown, told on stderr: its trace (`lead` for "Uncaught "), marked with its class.
function report(error, lead = 'Uncaught ') {
  const told = describeError(error);
  emit({ k: 'e', n: errorName(error), d: lead + told.slice('Uncaught '.length) });
}

// -- running code ----------------------------------------------------------------------------

let current = null;
let runs = 0;
// The cell to run: its JavaScript, and the code's own place for a place in it.
function prepare(state, code) {
  const filename = `<cell ${state.id}>`;
  if (compiler === null) return { filename, code, position: (line, column) => ({ line, column }) };
  const compiled = compiler.compile(code, filename);
  if (compiled.error) throw compiled.error;
  return { filename, code: compiled.code, position: compiled.position };
}

const STOPPED = Symbol('stopped');
// The code waits for input, but its stdin has ended and nothing else is pending.
const STUCK = Symbol('stuck');
const STUCK_NOTE =
  '[lmc] The code waits for input from its stdin, but nothing answers input here: pass ' +
  'on_input= to Computer (lmc repl answers it at its prompt). Its stdin is at its end, and ' +
  'nothing else could wake the code.\n';

// Sets the run's variables; returns what puts back each one as it was (unset if it was).
function setEnv(env) {
  const names = env ? Object.keys(env) : [];
  const saved = names.map((name) => [name, Object.hasOwn(process.env, name), process.env[name]]);
  for (const name of names) process.env[name] = env[name];
  return () => {
    for (const [name, had, value] of saved) {
      if (had) process.env[name] = value;
      else delete process.env[name];
    }
  };
}

// A stop request was read since the last run started: a SIGINT may have followed it.
let stopAsked = false;

async function execute(request) {
  if (stopAsked) {
    // One that landed as a statement of the stopped run ended is held for the next
    // statement to run: it is taken here instead (sigint.js).
    stopAsked = false;
    drainSigint();
  }
  runs += 1;
  // done: the cell's code has settled (what it left may still read its stdin).
  const state = {
    id: request.id,
    lines: request.lines !== false,
    status: 'ok',
    stopped: false,
    done: false,
  };
  const stopped = new Promise((resolve) => {
    state.stop = (why = STOPPED) => resolve(why);
  });
  current = state;
  stdin.renew();
  const restoreEnv = setEnv(request.env);
  let pending = false;
  try {
    const cell = prepare(state, request.code);
    const onLine = (line) => emit({ k: 'l', id: state.id, n: line });
    const run = runCell(state, cell, state.lines ? onLine : null);
    const over = () => {
      state.done = true;
    };
    run.then(over, over);
    let value = await Promise.race([run, stopped]);
    // Code done while a read of its stdin goes on (a readline question): that read is answered
    // (or gets end-of-input) before the run ends.
    if (value !== STOPPED && value !== STUCK) {
      const read = await Promise.race([stdin.whileReading(), stopped]);
      if (read === STOPPED || read === STUCK) value = read;
    }
    if (value === STUCK) {
      state.status = 'error';
      run.catch(() => {});
      emit({ k: 'e', d: STUCK_NOTE });
    } else if (value === STOPPED) {
      pending = true;
      stdin.abandon();
      run.catch(() => {});
    } else if (value !== undefined) {
      emit({ k: 'v', d: inspect(value) + '\n' });
    }
  } catch (error) {
    if (isInterrupt(error)) {
      state.stopped = true;
    } else {
      failed(state, error);
      report(error);
    }
  }
  // One turn of the event loop: a promise this code rejected and left unhandled is
  // reported as part of this execution.
  await new Promise((resolve) => setImmediate(resolve));
  restoreEnv();
  current = null;
  const status = state.stopped ? 'interrupted' : state.status;
  const done = { k: 'd', id: state.id, s: status, p: pending, c: runs };
  if (status === 'error' && state.error !== undefined) done.n = state.error;
  emit(done);
}

// -- the process --------------------------------------------------------------------------

// Stop the run going on (run `id` only, when given): its statements stop, and so do its
// awaits (see gated() in cells.js).
function stopRun(id) {
  stopAsked = true;
  if (current !== null && !current.stopped && (id === undefined || current.id === id)) {
    current.stopped = true;
    stopCell(current.id);
    current.stop();
  }
}

// A SIGINT stops nothing by itself: every stop names its run on the control FIFO first, and
// the signal only breaks a statement that keeps node too busy to read it (breakOnSigint).
// One that comes late must not stop a later run: libuv hands signals on after the I/O of
// the same poll, and that I/O may be the next run's request; one that node's watchdog
// holds is taken before the next run (sigint.js). The listener keeps node alive.
process.on('SIGINT', () => {});

process.on('uncaughtException', (error) => {
  failed(current, error);
  report(error);
});

process.on('unhandledRejection', (reason) => {
  failed(current, reason);
  report(reason, 'Uncaught (in promise) ');
});

process.on('exit', (code) => emit({ k: 'x', c: code }));

let queue = Promise.resolve();
let partial = '';
const control = new net.Socket({ fd: controlFd, readable: true, writable: false });
control.setEncoding('utf8');
control.on('data', (chunk) => {
  const lines = (partial + chunk).split('\n');
  partial = lines.pop();
  for (const line of lines) {
    if (line.trim() === '') continue;
    const request = parseJSON(line);
    if (request.stop !== undefined) stopRun(request.stop);
    else queue = queue.then(() => execute(request));
  }
});
control.on('end', () => process.exit(0));

stdin.ready();
emit({ k: 'r', pid: process.pid });
if (compiler !== null) {
  compiler.install();
  setImmediate(compiler.warm);
}

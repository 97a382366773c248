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
// vm.Script in this context: const, let and class declarations live on in the global
// lexical scope, function declarations and vars are hoisted first, and a statement with
// a top-level await goes through node's own REPL rewrite. Nothing is added to the code.
// `import` declarations become global bindings (imports.js); `export` is dropped from
// declarations. With LMC_NODE_LANGUAGE=typescript, each cell is TypeScript, transpiled
// first (typescript.js, the compiler from LMC_TYPESCRIPT or this folder's node_modules).

const fs = require('fs');
const net = require('net');
const path = require('path');
const util = require('util');
const vm = require('vm');
const Module = require('module');
const { createImports, dynamicImport } = require('./imports.js');
const { installStdin } = require('./stdin.js');

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

function optional(id) {
  try {
    return require(id);
  } catch {
    return null;
  }
}
const acorn = optional('internal/deps/acorn/acorn/dist/acorn');
const topLevelAwait = optional('internal/repl/await');

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

// Frames of vm and of this folder's files (the runner's own), cut from reported stacks.
const RUNNER_FRAME = new RegExp(
  String.raw`\(node:vm:|\(node:internal\/vm|` +
    (__dirname + path.sep).replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
);

function describeError(error) {
  if (!(error instanceof Error) || typeof error.stack !== 'string') {
    return 'Uncaught ' + inspect(error) + '\n';
  }
  const lines = error.stack.split('\n');
  const cut = lines.findIndex((line, index) => index > 0 && RUNNER_FRAME.test(line));
  const stack = (cut > 0 ? lines.slice(0, cut) : lines).join('\n');
  const extra = Object.keys(error).length > 0 ? ' ' + inspect({ ...error }) : '';
  return 'Uncaught ' + stack + extra + '\n';
}

// The class of what was thrown: an Error's constructor (TypeError, a class of the code's own),
// an object's constructor, else the type of the value ("string", "number", "null").
function errorName(error) {
  if (error === null) return 'null';
  if (typeof error !== 'object' && typeof error !== 'function') return typeof error;
  const made = error.constructor;
  if (typeof made === 'function' && typeof made.name === 'string' && made.name !== '') {
    return made.name;
  }
  return typeof error.name === 'string' && error.name !== '' ? error.name : typeof error;
}

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

const isInterrupt = (error) =>
  error instanceof Error && error.code === 'ERR_SCRIPT_EXECUTION_INTERRUPTED';

// -- running code ----------------------------------------------------------------------------

let current = null;
let runs = 0;
const imports = createImports();

function runScript(source, filename, line, column) {
  const script = new vm.Script(source, {
    filename,
    lineOffset: line - 1,
    columnOffset: column,
    importModuleDynamically: dynamicImport,
  });
  return script.runInThisContext({ breakOnSigint: true, displayErrors: false });
}

function parse(code) {
  return acorn.Parser.parse(code, {
    ecmaVersion: 'latest',
    sourceType: 'script',
    allowAwaitOutsideFunction: true,
    allowImportExportEverywhere: true,
    allowHashBang: true,
    locations: true,
  });
}

function varNames(statement) {
  const declaration =
    statement.type === 'VariableDeclaration'
      ? statement
      : ['ForStatement', 'ForInStatement', 'ForOfStatement'].includes(statement.type)
        ? statement.init || statement.left
        : null;
  if (!declaration || declaration.type !== 'VariableDeclaration' || declaration.kind !== 'var') {
    return [];
  }
  const names = [];
  const collect = (pattern) => {
    if (!pattern) return;
    if (pattern.type === 'Identifier') names.push(pattern.name);
    else if (pattern.type === 'ObjectPattern') {
      pattern.properties.forEach((p) => collect(p.type === 'RestElement' ? p.argument : p.value));
    } else if (pattern.type === 'ArrayPattern') pattern.elements.forEach(collect);
    else if (pattern.type === 'RestElement') collect(pattern.argument);
    else if (pattern.type === 'AssignmentPattern') collect(pattern.left);
  };
  declaration.declarations.forEach((d) => collect(d.id));
  return names;
}

// A declaration without its `export`; null for an export list, which runs nothing.
function unexported(statement) {
  if (statement.type === 'ExportNamedDeclaration') {
    return statement.declaration || (statement.source ? statement : null);
  }
  const inner = statement.type === 'ExportDefaultDeclaration' ? statement.declaration : null;
  return inner && inner.id && inner.type.endsWith('Declaration') ? inner : statement;
}

// Cells that were interrupted: their own awaits never resume (see gated()).
const stoppedCells = new Set();
Object.defineProperty(globalThis, '__lmc_gate', {
  value: (value, id) =>
    Promise.resolve(value).then(
      (result) => (stoppedCells.has(id) ? new Promise(() => {}) : result),
      (error) => (stoppedCells.has(id) ? new Promise(() => {}) : Promise.reject(error)),
    ),
  enumerable: false,
});

// The statement's source with each of its own awaits (not those of functions it
// defines) going through __lmc_gate: once the cell is interrupted, it stops at its next
// await instead of going on in the background. Only text on one line is added.
function gated(cell, statement, id) {
  const inserts = [];
  const visit = (node) => {
    if (!node || typeof node.type !== 'string') return;
    if (/Function/.test(node.type)) return;
    if (node.type === 'AwaitExpression' && node.argument) {
      inserts.push([node.argument.start, '__lmc_gate(']);
      inserts.push([node.argument.end, `, ${id})`]);
    }
    for (const key of Object.keys(node)) {
      const child = node[key];
      if (Array.isArray(child)) child.forEach(visit);
      else if (child && typeof child.type === 'string' && key !== 'loc') visit(child);
    }
  };
  visit(statement);
  let source = cell.code.slice(statement.start, statement.end);
  inserts.sort((a, b) => b[0] - a[0]);
  for (const [at, text] of inserts) {
    const offset = at - statement.start;
    source = source.slice(0, offset) + text + source.slice(offset);
  }
  return source;
}

async function runStatement(cell, statement, id) {
  const { line, column } = statement.loc.start;
  if (statement.type === 'ImportDeclaration') {
    const at = cell.position(line, column);
    return imports.run(statement, `${cell.filename}:${at.line}:${at.column + 1}`);
  }
  const source = gated(cell, statement, id);
  const rewritten =
    topLevelAwait && source.includes('await') ? topLevelAwait.processTopLevelAwait(source) : null;
  if (rewritten === null) return runScript(source, cell.filename, line, column);
  const outcome = await runScript(rewritten, cell.filename, line, column);
  return outcome ? outcome.value : undefined;
}

async function runCode(state, cell) {
  const { code, filename } = cell;
  let program;
  try {
    program = parse(code);
  } catch (parseError) {
    // V8's own SyntaxError reads better; if V8 accepts the code, run it whole.
    return runScript(code, filename, 1, 0);
  }
  const body = program.body.map(unexported).filter((s) => s !== null);
  const hoisted = body.filter((s) => s.type === 'FunctionDeclaration');
  const vars = [...new Set(body.flatMap(varNames))];
  if (hoisted.length > 0 || vars.length > 0) {
    // Declarations are instantiated before the first statement runs, as in one script.
    for (const name of vars) runScript(`var ${name};`, filename, 1, 0);
    for (const s of hoisted) {
      runScript(code.slice(s.start, s.end), filename, s.loc.start.line, s.loc.start.column);
    }
  }
  let value;
  for (const statement of body) {
    value = undefined;
    if (statement.type === 'FunctionDeclaration') continue;
    if (state.stopped) break;
    const { line, column } = statement.loc.start;
    if (state.lines) emit({ k: 'l', id: state.id, n: cell.position(line, column).line });
    value = await runStatement(cell, statement, state.id);
  }
  return value;
}

// The cell to run: its JavaScript, and the code's own place for a place in it.
function prepare(state, code) {
  const filename = `<cell ${state.id}>`;
  if (compiler === null) return { filename, code, position: (line, column) => ({ line, column }) };
  const compiled = compiler.compile(code, filename);
  if (compiled.error) throw compiled.error;
  return { filename, code: compiled.code, position: compiled.position };
}

async function runWhole(state, code) {
  // Without node's parser: one script, no line tracking, top-level await as a function body.
  const filename = `<cell ${state.id}>`;
  try {
    return runScript(code, filename, 1, 0);
  } catch (error) {
    if (!(error instanceof SyntaxError) || !code.includes('await')) throw error;
  }
  return await runScript(`(async () => {\n${code}\n})()`, filename, 0, 0);
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

async function execute(request) {
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
    const run = acorn ? runCode(state, cell) : runWhole(state, cell.code);
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
      emit({ k: 'o', d: inspect(value) + '\n' });
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
// awaits (see gated()).
function stopRun(id) {
  if (current !== null && !current.stopped && (id === undefined || current.id === id)) {
    current.stopped = true;
    stoppedCells.add(current.id);
    current.stop();
  }
}

// A SIGINT stops nothing by itself: every stop names its run on the control FIFO first, and
// the signal only breaks a statement that keeps node too busy to read it (breakOnSigint).
// One that comes late must not stop a later run: libuv hands signals on after the I/O of
// the same poll, and that I/O may be the next run's request. The listener keeps node alive.
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

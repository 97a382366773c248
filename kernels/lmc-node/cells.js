'use strict';
// Running a cell: node's own parser (acorn) cuts it into top-level statements, run one at a
// time as vm.Scripts in this context. Each statement's source is rewritten only as running
// it needs: its `export` dropped, its awaits gated (an interrupted cell stops at its next
// one), a top-level await put through node's own REPL rewrite; an import declaration
// becomes global bindings (imports.js). The parser and the rewrite are node internals
// (--expose-internals); without the parser a cell runs whole.

const vm = require('vm');
const { createImports, dynamicImport } = require('./imports.js');

function optional(id) {
  try {
    return require(id);
  } catch {
    return null;
  }
}
const acorn = optional('internal/deps/acorn/acorn/dist/acorn');
const topLevelAwait = optional('internal/repl/await');
const imports = createImports();

// The cell's top-level statements (a Program node).
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
const stopCell = (id) => stoppedCells.add(id);
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

function runScript(source, filename, line, column) {
  const script = new vm.Script(source, {
    filename,
    lineOffset: line - 1,
    columnOffset: column,
    importModuleDynamically: dynamicImport,
  });
  return script.runInThisContext({ breakOnSigint: true, displayErrors: false });
}

async function runStatement(cell, statement, id) {
  const { line, column } = statement.loc.start;
  if (statement.type === 'ImportDeclaration') {
    const at = cell.position(line, column);
    return imports.run(statement, `${cell.filename}:${at.line}:${at.column + 1}`);
  }
  const source = gated(cell, statement, id);
  const rewritten = rewriteAwait(source);
  if (rewritten === null) return runScript(source, cell.filename, line, column);
  const outcome = await runScript(rewritten, cell.filename, line, column);
  return outcome ? outcome.value : undefined;
}

async function runCode(state, cell, onLine) {
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
    if (onLine !== null) onLine(cell.position(line, column).line);
    value = await runStatement(cell, statement, state.id);
  }
  return value;
}

// Without node's parser: one script, no line tracking, top-level await as a function body.
async function runWhole(cell) {
  const { code, filename } = cell;
  try {
    return runScript(code, filename, 1, 0);
  } catch (error) {
    if (!(error instanceof SyntaxError) || !code.includes('await')) throw error;
  }
  return await runScript(`(async () => {\n${code}\n})()`, filename, 0, 0);
}

// Runs the cell (its filename, code and position() for a place in the code it came from)
// statement by statement while state.stopped is not set, telling each statement's line to
// onLine (null: none); its value is the last statement's.
function runCell(state, cell, onLine) {
  return acorn === null ? runWhole(cell) : runCode(state, cell, onLine);
}

// The statement's source as a script for top-level await (node's REPL rewrite), or null
// when it has none (or node lacks the rewrite): it runs as it is.
function rewriteAwait(source) {
  return topLevelAwait && source.includes('await')
    ? topLevelAwait.processTopLevelAwait(source)
    : null;
}

module.exports = { runCell, stopCell };

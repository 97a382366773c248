'use strict';
// TypeScript cells: each is transpiled whole with the typescript package's transpileModule
// (syntax only, no type checking, as tsx does) and the JavaScript runs like any other cell.
// The source map of each cell turns positions back into the cell's own lines: the runner
// asks for them when it reports a line, and Error.prepareStackTrace rewrites every stack
// frame in a cell ("<cell 3>:8:11") to its TypeScript line and column, so thrown errors,
// their `.stack` and what the runner reports all name the TypeScript lines.

const Module = require('module');

// Source maps kept for stack frames of functions defined by earlier cells.
const MAPS_KEPT = 1000;
const CELL_FRAME = /(<cell \d+>):(\d+):(\d+)/g;

function loadTypeScript(location) {
  const ts = require(location || 'typescript');
  if (typeof ts.transpileModule !== 'function') {
    throw new Error(`typescript ${ts.version} has no transpileModule; run \`lmc setup\``);
  }
  return ts;
}

function compilerOptions(ts) {
  return {
    // What node runs natively; newer syntax (`using`, decorators) is lowered.
    target: ts.ScriptTarget.ES2022,
    // Imports stay as written (the runner binds them), `import x = require()` is a require.
    module: ts.ModuleKind.Preserve ?? ts.ModuleKind.ESNext,
    // Imports are kept even when this cell does not use them: a later cell may.
    verbatimModuleSyntax: true,
    sourceMap: true,
  };
}

// The TypeScript compiler's first complaint, shaped like V8's own syntax errors.
function syntaxError(ts, diagnostic, filename) {
  const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
  const error = new SyntaxError(message);
  if (diagnostic.file && diagnostic.start !== undefined) {
    const file = diagnostic.file;
    const { line, character } = file.getLineAndCharacterOfPosition(diagnostic.start);
    const text = file.text.split(/\r?\n/)[line] ?? '';
    const width = Math.max(1, Math.min(diagnostic.length || 1, text.length - character));
    const caret = ' '.repeat(character) + '^'.repeat(width);
    error.stack = `${filename}:${line + 1}\n${text}\n${caret}\n\nSyntaxError: ${message}`;
  }
  return error;
}

// The cell position (1-based line, 0-based column) behind a position of its JavaScript.
function original(map, line, column) {
  const entry = map.findEntry(line - 1, column);
  if (!entry || entry.originalLine === undefined) return null;
  return { line: entry.originalLine + 1, column: entry.originalColumn };
}

function createCompiler(location) {
  let ts = null;
  let failure = null;
  const maps = new Map();

  function typescript() {
    if (ts === null && failure === null) {
      try {
        ts = loadTypeScript(location);
      } catch (error) {
        failure = error;
      }
    }
    if (failure !== null) throw failure;
    return ts;
  }

  function remember(filename, map) {
    maps.delete(filename);
    maps.set(filename, map);
    if (maps.size > MAPS_KEPT) maps.delete(maps.keys().next().value);
  }

  // {code, position} for the JavaScript of `source`, or {error} if it does not parse.
  function compile(source, filename) {
    const compiler = typescript();
    const output = compiler.transpileModule(source, {
      fileName: 'cell.ts',
      reportDiagnostics: true,
      compilerOptions: compilerOptions(compiler),
    });
    const problem = (output.diagnostics || []).find(
      (d) => d.category === compiler.DiagnosticCategory.Error,
    );
    if (problem) return { error: syntaxError(compiler, problem, filename) };
    const map = new Module.SourceMap(JSON.parse(output.sourceMapText));
    remember(filename, map);
    const position = (line, column) => original(map, line, column) || { line, column };
    return { code: output.outputText, position };
  }

  function mapFrame(text) {
    return text.replace(CELL_FRAME, (whole, filename, line, column) => {
      const map = maps.get(filename);
      const found = map && original(map, Number(line), Number(column) - 1);
      return found ? `${filename}:${found.line}:${found.column + 1}` : whole;
    });
  }

  // Stacks name the cells' TypeScript lines (as source-map-support does for files).
  function install() {
    Error.prepareStackTrace = (error, frames) => {
      let head;
      try {
        head = Error.prototype.toString.call(error);
      } catch {
        head = 'Error';
      }
      return head + frames.map((frame) => `\n    at ${mapFrame(String(frame))}`).join('');
    };
  }

  // Load the compiler and compile once ahead of the first cell (both take a while).
  function warm() {
    try {
      compile('', '<warm-up>');
    } catch {
      // The first cell reports it.
    }
  }

  return { compile, install, warm };
}

module.exports = { createCompiler };

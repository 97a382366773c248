'use strict';
// ES import declarations of a cell, made into bindings of the global lexical scope.
//
// The runner evaluates scripts, not a module graph, so `import x from 'm'` becomes a `let`
// binding of the global scope: like the cell's own `const`/`let`, later cells see it, and
// running the same import again binds its names again. The module is loaded with require()
// from the working directory (node's resolution, as the global `require` does); a module
// only ESM can load (ERR_REQUIRE_ESM and the like) is import()ed instead. A default import
// of a CommonJS module follows the usual interop: `exports.default` when the module sets
// `__esModule`, else `module.exports`; a namespace import of one is `module.exports`.
// A named import the module lacks is `undefined` (a TypeScript type imported without
// `type` is one).

const Module = require('module');
const path = require('path');
const url = require('url');
const util = require('util');
const vm = require('vm');

const ESM_ONLY = new Set(['ERR_REQUIRE_ESM', 'ERR_REQUIRE_ASYNC_MODULE', 'ERR_PACKAGE_PATH_NOT_EXPORTED']);
const NOT_FOUND = new Set(['MODULE_NOT_FOUND', 'ERR_MODULE_NOT_FOUND']);
// Frames of the loading machinery and of the runner itself, cut from a load error's stack.
const LOADER_FRAME = new RegExp(
  String.raw`\(node:internal/modules/|\(node:vm:|\(node:internal/vm|\[lmc-node import\]|` +
    (__dirname + path.sep).replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
);
const isNamespace = util.types.isModuleNamespaceObject;

function requireFromCwd() {
  return Module.createRequire(path.join(process.cwd(), '[lmc-node]'));
}

// Where an older node (without the main context's loader for vm scripts) imports from.
function resolveURL(specifier) {
  if (/^[a-z][a-z0-9+.-]*:/i.test(specifier) || Module.isBuiltin(specifier)) return specifier;
  if (specifier.startsWith('.') || path.isAbsolute(specifier)) {
    return url.pathToFileURL(path.resolve(specifier)).href;
  }
  try {
    return url.pathToFileURL(requireFromCwd().resolve(specifier)).href;
  } catch {
    return specifier;
  }
}

// What vm.Script gets as importModuleDynamically: `import()` in a cell resolves from the
// working directory.
const mainLoader = vm.constants && vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER;
const dynamicImport = mainLoader || ((specifier) => import(resolveURL(specifier)));

const importESM = mainLoader
  ? new vm.Script('(specifier) => import(specifier)', {
      filename: '[lmc-node import]',
      importModuleDynamically: mainLoader,
    }).runInThisContext()
  : dynamicImport;

async function load(specifier) {
  try {
    const exports = requireFromCwd()(specifier);
    if (isNamespace(exports)) return { namespace: exports, default: exports.default };
    const interop = exports != null && exports.__esModule && 'default' in exports;
    return { namespace: exports, default: interop ? exports.default : exports };
  } catch (error) {
    if (!(error instanceof Error) || !ESM_ONLY.has(error.code)) throw error;
  }
  const namespace = await importESM(specifier);
  return { namespace, default: namespace.default };
}

function specifiersOf(declaration) {
  return declaration.specifiers.map((s) => ({
    local: s.local.name,
    imported:
      s.type === 'ImportDefaultSpecifier'
        ? 'default'
        : s.type === 'ImportNamespaceSpecifier'
          ? '*'
          : s.imported.name ?? s.imported.value,
  }));
}

function valueOf(loaded, imported) {
  if (imported === '*') return loaded.namespace;
  if (imported === 'default') return loaded.default;
  return loaded.namespace == null ? undefined : loaded.namespace[imported];
}

// The error as the cell's own: its stack ends at the import's line (`where`).
function located(error, where) {
  if (!(error instanceof Error)) return error;
  let failure = error;
  let head;
  if (NOT_FOUND.has(error.code)) {
    failure = new Error(String(error.message).split('\n')[0]);
    failure.code = error.code;
    head = `${failure.name}: ${failure.message}`;
  } else {
    const lines = String(error.stack || `${error.name}: ${error.message}`).split('\n');
    const cut = lines.findIndex((line, index) => index > 0 && LOADER_FRAME.test(line));
    head = (cut > 0 ? lines.slice(0, cut) : lines).join('\n');
  }
  failure.stack = `${head}\n    at ${where}`;
  return failure;
}

function createImports() {
  const declared = new Set();

  function bind(names, values) {
    const fresh = [...new Set(names.filter((name) => !declared.has(name)))];
    let param = '$values';
    while (names.includes(param)) param += '_';
    const assignments = names.map((name, i) => `${name} = ${param}[${i}];`).join(' ');
    const declaration = fresh.length > 0 ? `let ${fresh.join(', ')};\n` : '';
    let assign;
    try {
      assign = vm.runInThisContext(`${declaration}(${param}) => { ${assignments} }`, {
        filename: '[lmc-node import]',
      });
    } catch (error) {
      // A name the code declared itself: V8's message, without this binding's source.
      throw error instanceof SyntaxError ? new SyntaxError(error.message) : error;
    }
    fresh.forEach((name) => declared.add(name));
    assign(values);
  }

  // Run one ImportDeclaration; `where` names its place in the cell ("<cell 3>:2:1").
  async function run(declaration, where) {
    const specifiers = specifiersOf(declaration);
    try {
      const loaded = await load(declaration.source.value);
      bind(
        specifiers.map((s) => s.local),
        specifiers.map((s) => valueOf(loaded, s.imported)),
      );
    } catch (error) {
      throw located(error, where);
    }
  }

  return { run };
}

module.exports = { createImports, dynamicImport };

'use strict';
// What the runner tells of a thrown value: its stack, without the frames of vm and of the
// runner's own files, and its class, which marks the error on the events FIFO.

const path = require('path');
const util = require('util');

const inspect = util.inspect;

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

const isInterrupt = (error) =>
  error instanceof Error && error.code === 'ERR_SCRIPT_EXECUTION_INTERRUPTED';

module.exports = { describeError, errorName, isInterrupt };

'use strict';
// Draining a SIGINT that node holds for a later statement.
//
// breakOnSigint works through node's SIGINT watchdog: while a statement runs, a helper
// thread waits on a semaphore that the SIGINT handler posts, and terminates the statement
// when it wakes. When the statement ends before that thread has woken (a busy host, or a
// signal that lands just as the statement ends), stopping the watchdog posts the semaphore
// too and the thread exits on one of the two posts: the other stays. The next statement
// that runs with breakOnSigint starts a new thread, which takes that post at once and
// terminates it, whatever run it belongs to.
//
// The host signals a run only after it has asked the runner to stop it by name, so before
// a run that follows a stop request the runner runs a statement of its own that waits, with
// breakOnSigint, until the watchdog's new thread is seen asleep on its semaphore (nothing
// was held) or until it is terminated by what was held.

const fs = require('fs');
const vm = require('vm');
const { isInterrupt } = require('./errors.js');

const TASKS = '/proc/self/task';
// Each wait between looks at the watchdog's thread, and the longest the drain takes.
const SLICE_MS = 1;
const LONGEST_MS = 2000;
// Without /proc: the watchdog's thread gets this long to wake.
const BLIND_MS = 50;

const cell = new Int32Array(new SharedArrayBuffer(4));

function tasks() {
  try {
    return fs.readdirSync(TASKS);
  } catch {
    return null;
  }
}

// Whether every thread in `tids` sleeps (state S): the watchdog's waits on its semaphore.
function asleep(tids) {
  for (const tid of tids) {
    let stat;
    try {
      stat = fs.readFileSync(`${TASKS}/${tid}/stat`, 'latin1');
    } catch {
      continue; // gone
    }
    if (stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'S') return false;
  }
  return true;
}

// The threads there were before the drain statement started its watchdog.
let before = null;

// Runs inside the drain statement, while its watchdog is on.
function settle() {
  const deadline = Date.now() + LONGEST_MS;
  if (before === null) {
    Atomics.wait(cell, 0, 0, BLIND_MS);
    return;
  }
  while (Date.now() < deadline) {
    Atomics.wait(cell, 0, 0, SLICE_MS);
    const now = tasks();
    if (now === null) return;
    const started = now.filter((tid) => !before.has(tid));
    if (started.length > 0 && asleep(started)) return;
  }
}

Object.defineProperty(globalThis, '__lmc_settle', { value: settle, enumerable: false });
const drainScript = new vm.Script('this.__lmc_settle()', { filename: '[lmc-drain]' });

// Takes a SIGINT node holds, if any; true if there was one.
function drainSigint() {
  const found = tasks();
  before = found === null ? null : new Set(found);
  try {
    drainScript.runInThisContext({ breakOnSigint: true });
    return false;
  } catch (error) {
    // Nothing else is thrown there; whatever it is, the run still goes on.
    return isInterrupt(error);
  } finally {
    before = null;
  }
}

module.exports = { drainSigint };

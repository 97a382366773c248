'use strict';
// process.stdin for the runner: a plain Readable over fd 0 (the runtime's stdin FIFO).
//
// Node's own process.stdin for a FIFO is a libuv pipe polled by the event loop, and a FIFO
// that never had a writer never polls readable: a read through it ('data', 'readable',
// readline, async iteration) waited for ever, and the runtime could not see it waiting.
// This one reads fd 0 with fs.read, a blocking read on a thread of libuv's pool: without a
// writer it gets end-of-input at once; with one (a run with an input callback) the runtime
// finds that thread blocked reading the FIFO and answers it. It never reads ahead (no
// high-water mark): only a consumer that wants data (flowing, or a read()) makes it read.
//
// A stream that reached its end stays ended, as a stream must; the next run's code gets
// a fresh one from process.stdin. Code that still waits once stdin ended and nothing else
// could wake it (an awaited rl.question) is ended instead of waiting for ever (installStdin). A run whose code is done waits while its stdin has a read
// going on (see whileReading): `rl.question(q, callback)` is answered before the run ends.

const fs = require('fs');
const { Readable } = require('stream');

const CHUNK = 65536;
const EMPTY = Buffer.alloc(0);
// How long a read of a non-blocking fd 0 that found nothing waits before it tries again (ms).
const RETRY = 20;

function createStdin(onEnd) {
  let stream = null;
  let settled = [];
  const ended = new WeakSet();
  // The streams with a read going on.
  const reading = new WeakSet();

  const wake = () => {
    const waiting = settled;
    settled = [];
    for (const resolve of waiting) resolve();
  };

  function open() {
    const buffer = Buffer.alloc(CHUNK);
    const readable = new Readable({
      highWaterMark: 0,
      read() {
        if (reading.has(readable)) return;
        reading.add(readable);
        // A turn later: a consumer that stopped wanting data meanwhile (readline's close()
        // pauses its input) must not leave a read waiting for a line nobody takes.
        setImmediate(() => {
          const consumers = readable.listenerCount('data') + readable.listenerCount('readable');
          if (consumers === 0 || (readable.isPaused() && readable.listenerCount('readable') === 0)) {
            reading.delete(readable);
            readable.push(EMPTY); // not reading: a later resume() reads again
            setImmediate(wake);
          } else {
            attempt();
          }
        });
        const attempt = () =>
          fs.read(0, buffer, 0, CHUNK, null, (error, count) => {
            if (error && error.code === 'EINTR') {
              attempt();
              return;
            }
            if (error && error.code === 'EAGAIN') {
              // fd 0 made non-blocking (by a child that shares it): wait a little, not spin.
              setTimeout(attempt, RETRY);
              return;
            }
            reading.delete(readable);
            if (ended.has(readable)) {
              // Abandoned by a stopped run (see abandon): what it brings is no one's.
            } else if (error) {
              ended.add(readable);
              readable.destroy(error);
            } else if (count > 0) {
              readable.push(Buffer.from(buffer.subarray(0, count)));
            } else {
              ended.add(readable);
              readable.push(null);
              onEnd();
            }
            // Whoever got the data may read again at once (a flowing stream): look after that.
            setImmediate(wake);
          });
      },
    });
    readable.fd = 0;
    readable.isTTY = false;
    return readable;
  }

  function current() {
    if (stream === null) stream = open();
    return stream;
  }

  // Resolves once the stream has no read going on. A stream starts reading on a later
  // tick than the code that asked it to (resume()), so that tick goes first.
  async function whileReading() {
    await new Promise((resolve) => setImmediate(resolve));
    while (stream !== null && reading.has(stream)) {
      await new Promise((resolve) => settled.push(resolve));
    }
  }

  // Code that runs next gets a fresh stream if this one has ended.
  function renew() {
    if (stream !== null && (ended.has(stream) || stream.destroyed)) stream = null;
  }

  // The run was stopped: the stream its code read ends here (its consumers see the end),
  // and a read of it still going on, which the runtime ends as the run ends, brings
  // nothing to anyone. The next run's code reads a fresh stream.
  function abandon() {
    if (stream === null || ended.has(stream)) return;
    const old = stream;
    ended.add(old);
    if (!old.destroyed) old.push(null);
  }

  return { current, whileReading, renew, abandon };
}

// What keeps the event loop alive, by kind ('PipeWrap', 'Timeout'...), counted; immediates
// are left out (the runner's own come and go each turn).
function resources() {
  const counts = new Map();
  for (const kind of process.getActiveResourcesInfo()) {
    if (kind !== 'Immediate') counts.set(kind, (counts.get(kind) || 0) + 1);
  }
  return counts;
}

// Makes process.stdin the runner's stream (see the header). `onStuck` is called when the
// stream reached its end and, a turn later, nothing but the runner's own handles keeps node
// alive: code still waiting then waits for input that can never come (plain node would exit).
function installStdin(onStuck) {
  let idle = null;
  const stuck = () => {
    const now = resources();
    for (const [kind, count] of idle) now.set(kind, (now.get(kind) || 0) - count);
    return [...now.values()].every((count) => count <= 0);
  };
  const stdin = createStdin(() => setImmediate(() => idle !== null && stuck() && onStuck()));
  Object.defineProperty(process, 'stdin', {
    configurable: true,
    enumerable: true,
    get: stdin.current,
  });
  // What the runner itself holds open, once it is ready and idle.
  stdin.ready = () => {
    idle = resources();
  };
  return stdin;
}

module.exports = { installStdin };

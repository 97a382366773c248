// The events FIFO of the runner protocol (see LmcJava.java), and the streams of the code
// that feed it: System.out and System.err as "o" and "e" events, System.in saying it waits.
// Events queue in PENDING and one writer thread writes them to the FIFO, so a flood of
// output goes out in few writes while a lone line goes at once; consecutive output of one
// stream is joined (up to JOIN characters) while it waits. Past ROOM characters waiting,
// the code waits for the writer: the runtime reading slowly slows the code down.

import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Objects;

final class LmcEvents {
  private static final Object EMIT = new Object();
  /** The events FIFO (nothing, for the warm-up of `lmc setup`). */
  static OutputStream events;

  private LmcEvents() {}

  private static final int JOIN = 64 * 1024;
  private static final int ROOM = 1 << 20;
  private static final StringBuilder PENDING = new StringBuilder();
  private static final StringBuilder JOINED = new StringBuilder();
  private static final Object WRITE = new Object();
  private static String joinedKind;
  /** The error class the joined output tells, or null. */
  private static String joinedError;

  static void emit(String event) {
    synchronized (EMIT) {
      waitForRoom();
      closeJoined();
      PENDING.append(event).append('\n');
      EMIT.notifyAll();
    }
  }

  static void output(String kind, String text) {
    output(kind, null, text);
  }

  /** The value of a cell's last expression: stdout of its own, a "v" event. */
  static void value(String text) {
    System.out.flush();
    output("v", null, text);
  }

  /** Tells on stderr what failed, marked with the error's class ``name``. */
  static void tell(String name, String text) {
    System.err.flush();
    if (!text.isEmpty()) {
      output("e", name, text);
    }
  }

  private static void output(String kind, String error, String text) {
    synchronized (EMIT) {
      waitForRoom();
      if (!kind.equals(joinedKind) || !Objects.equals(error, joinedError)
          || JOINED.length() >= JOIN) {
        closeJoined();
      }
      joinedKind = kind;
      joinedError = error;
      JOINED.append(text);
      EMIT.notifyAll();
    }
  }

  private static void waitForRoom() {
    boolean interrupted = false;
    while (PENDING.length() + JOINED.length() > ROOM) {
      try {
        EMIT.wait();
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  private static void closeJoined() {
    if (joinedKind != null) {
      PENDING.append("{\"k\":\"").append(joinedKind).append("\",");
      if (joinedError != null) {
        LmcJson.quote(joinedError, PENDING.append("\"n\":")).append(",");
      }
      PENDING.append("\"d\":");
      LmcJson.quote(JOINED, PENDING).append("}\n");
      JOINED.setLength(0);
      joinedKind = null;
      joinedError = null;
    }
  }

  /** The next batch of events (waits for one if ``wait``), or null. */
  private static byte[] batch(boolean wait) throws InterruptedException {
    synchronized (EMIT) {
      while (wait && PENDING.length() == 0 && joinedKind == null) {
        EMIT.wait();
      }
      closeJoined();
      if (PENDING.length() == 0) {
        return null;
      }
      byte[] data = PENDING.toString().getBytes(StandardCharsets.UTF_8);
      PENDING.setLength(0);
      EMIT.notifyAll();
      return data;
    }
  }

  static void writeEvents() {
    try {
      while (true) {
        synchronized (WRITE) {
          byte[] data = batch(false);
          if (data != null) {
            events.write(data);
            continue;
          }
        }
        synchronized (EMIT) {
          while (PENDING.length() == 0 && joinedKind == null) {
            EMIT.wait();
          }
        }
      }
    } catch (IOException | InterruptedException gone) {
      Runtime.getRuntime().halt(70); // the runtime is gone
    }
  }

  /** What is still queued, written before the JVM exits (System.exit, the end). */
  static void drain() {
    synchronized (WRITE) {
      try {
        byte[] data = batch(false);
        if (data != null) {
          events.write(data);
        }
      } catch (IOException | InterruptedException gone) {
        // nothing more can be said
      }
    }
  }

  /** What the code writes to System.out or System.err, as "o" or "e" events. */
  static final class Captured extends OutputStream {
    private final String kind;
    private final CharsetDecoder decoder =
        StandardCharsets.UTF_8.newDecoder()
            .onMalformedInput(CodingErrorAction.REPLACE)
            .onUnmappableCharacter(CodingErrorAction.REPLACE);
    private byte[] held = new byte[0];

    Captured(String kind) {
      this.kind = kind;
    }

    @Override
    public void write(int b) {
      write(new byte[] {(byte) b}, 0, 1);
    }

    @Override
    public synchronized void write(byte[] b, int off, int len) {
      if (held.length == 0 && len > 0 && b[off + len - 1] >= 0) { // ends in ASCII: whole
        output(kind, new String(b, off, len, StandardCharsets.UTF_8));
        return;
      }
      ByteBuffer in = ByteBuffer.allocate(held.length + len).put(held).put(b, off, len).flip();
      CharBuffer out = CharBuffer.allocate(in.remaining() + 1);
      decoder.decode(in, out, false);
      held = new byte[in.remaining()];
      in.get(held);
      if (out.position() > 0) {
        output(kind, out.flip().toString());
      }
    }
  }

  /** System.in: a read that would wait first says so with an "i" event. */
  static final class Asking extends InputStream {
    private final FileInputStream in;

    Asking(FileInputStream in) {
      this.in = in;
    }

    @Override
    public int read() throws IOException {
      byte[] one = new byte[1];
      return read(one, 0, 1) < 0 ? -1 : one[0] & 255;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      if (len == 0) {
        return 0;
      }
      long id = LmcJava.running;
      if (id >= 0 && in.available() == 0) {
        emit("{\"k\":\"i\",\"id\":" + id + "}");
      }
      return in.read(b, off, len);
    }

    @Override
    public int available() throws IOException {
      return in.available();
    }
  }
}

// The program lmc-runtime runs inside the JVM for Java: a persistent evaluator on the JShell API.
//
//   java [flags] -cp BUILD LmcJava EVENTS_FIFO CONTROL_FIFO
//
// It speaks the line protocol of ../lmc-node/runner.js: requests are JSON lines on CONTROL_FIFO,
// {"id": 1, "code": "...", "lines": true, "env": {NAME: VALUE}} or {"stop": 1}; events are JSON
// lines on EVENTS_FIFO: "r" ready, "o"/"e" output, "l" the line now running, "d" done (with "c",
// this JVM's count of runs, and "n", a failed run's error: the exception's fully qualified class
// name, or CompilationError for code that does not compile). The text that tells that error
// is an "e" event naming it too, before its text: {"k":"e","n":NAME,"d":TEXT}. One more:
//   {"k":"i","id":ID}    the code reads System.in and nothing is there yet: it waits for a line
//
// A cell is cut into snippets by JShell's own parser (analyzeCompletion) before any of it runs,
// so a cell that ends mid-statement runs nothing. Snippets run in this JVM (local execution):
// a stop request stops the one running, and System.exit ends the process with its code.
// Errors name the lines of the cell: a compile error its line, an exception's frames theirs.
// The value of a cell's last snippet, when it is an expression (not a void call, a statement or
// a declaration) with no semicolon after it, is printed on stdout as JShell shows it: "x" for a
// String, 2 for 1 + 1. A semicolon makes it a statement, which shows nothing (as in IPython).

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.stream.Collectors;
import jdk.jshell.DeclarationSnippet;
import jdk.jshell.Diag;
import jdk.jshell.EvalException;
import jdk.jshell.JShell;
import jdk.jshell.JShellException;
import jdk.jshell.Snippet;
import jdk.jshell.SnippetEvent;
import jdk.jshell.SourceCodeAnalysis;
import jdk.jshell.UnresolvedReferenceException;

public final class LmcJava {
  private static final Object EMIT = new Object();
  private static OutputStream events;
  private static JShell shell;
  /** The request running, or -1; whether a stop for it came. */
  private static volatile long running = -1;

  private static volatile boolean stopped;
  /** How many runs this JVM has had; the class of the error that ended the run going on. */
  private static long runs;

  private static String error;
  /** Snippet kinds whose value is the cell's result: an expression's, a bare variable's. */
  private static final java.util.Set<Snippet.SubKind> RESULTS =
      java.util.EnumSet.of(
          Snippet.SubKind.TEMP_VAR_EXPRESSION_SUBKIND, Snippet.SubKind.VAR_VALUE_SUBKIND);
  /** Where each snippet came from: {request, line of its cell}; the last 10,000. */
  private static final Map<String, long[]> ORIGINS =
      new LinkedHashMap<>() {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, long[]> eldest) {
          return size() > 10_000;
        }
      };

  public static void main(String[] args) throws Exception {
    boolean warm = args.length == 1 && args[0].equals("--warm");
    events = warm ? OutputStream.nullOutputStream() : new FileOutputStream(args[0]);
    System.setOut(new PrintStream(new Captured("o"), true, StandardCharsets.UTF_8));
    System.setErr(new PrintStream(new Captured("e"), true, StandardCharsets.UTF_8));
    System.setIn(new Asking(new FileInputStream(FileDescriptor.in)));
    Thread writer = new Thread(LmcJava::writeEvents, "lmc-events");
    writer.setDaemon(true);
    writer.start();
    Runtime.getRuntime().addShutdownHook(new Thread(LmcJava::drain, "lmc-drain"));
    shell = JShell.builder().executionEngine("local").build();
    for (SnippetEvent first : shell.eval("Object lmc$warm = String.valueOf(1);")) {
      shell.drop(first.snippet()); // the compiler is loaded and warm before the first cell
    }
    if (warm) { // `lmc setup` records the classes a session loads (a class-data archive)
      for (String code : WARM_UP) {
        String quoted = Json.quote(code, new StringBuilder()).toString();
        run(Json.object("{\"id\": 1, \"lines\": true, \"code\": " + quoted + "}"));
      }
      return;
    }
    FileInputStream control = new FileInputStream(args[1]);
    BlockingQueue<Map<String, Object>> runs = new LinkedBlockingQueue<>();
    Thread reader = new Thread(() -> readControl(control, runs), "lmc-control");
    reader.setDaemon(true);
    reader.start();
    emit("{\"k\":\"r\",\"pid\":" + ProcessHandle.current().pid() + "}");
    while (true) {
      Map<String, Object> request = runs.take();
      if (request.isEmpty()) {
        System.exit(0); // the control FIFO ended: the runtime is gone
      }
      run(request);
    }
  }

  /** Cells that load what a session's first runs load. */
  private static final String[] WARM_UP = {
    "int n = 1;\nSystem.out.println(n + \" é\");",
    "void f() {\n  throw new IllegalStateException(\"x\");\n}\nf();",
    "int wrong = \"x\";",
    "record R(int x) {}\nclass C {}\nvar list = java.util.List.of(new R(1));",
    "void g() { h(); }",
  };

  private static void readControl(InputStream control, BlockingQueue<Map<String, Object>> runs) {
    try (BufferedReader lines =
        new BufferedReader(new InputStreamReader(control, StandardCharsets.UTF_8))) {
      for (String line; (line = lines.readLine()) != null; ) {
        Map<String, Object> request = Json.object(line);
        if (request == null) {
          continue;
        }
        Object stop = request.get("stop");
        if (stop instanceof Number) {
          if (((Number) stop).longValue() == running) {
            stopped = true;
            shell.stop();
          }
        } else if (request.get("id") instanceof Number && request.get("code") instanceof String) {
          runs.add(request);
        }
      }
    } catch (IOException failed) {
      // the same as the end of the FIFO
    }
    runs.add(Map.of());
  }

  // -- one run ------------------------------------------------------------------------------

  @SuppressWarnings("unchecked")
  private static void run(Map<String, Object> request) {
    long id = ((Number) request.get("id")).longValue();
    String code = ((String) request.get("code")).replace("\r\n", "\n");
    boolean lines = Boolean.TRUE.equals(request.get("lines"));
    Object env = request.get("env");
    String status = "ok";
    Map<String, String> saved = new HashMap<>();
    runs++;
    error = null;
    try {
      List<int[]> snippets = new ArrayList<>();
      if (!cut(code, snippets)) {
        status = "error";
      } else {
        if (env instanceof Map) {
          Environment.set((Map<String, Object>) env, saved);
        }
        stopped = false;
        running = id;
        for (int i = 0; i < snippets.size(); i++) {
          int[] snippet = snippets.get(i);
          if (lines) {
            emit("{\"k\":\"l\",\"id\":" + id + ",\"n\":" + lineOf(code, snippet[0]) + "}");
          }
          boolean ok = evaluate(id, code, snippet, i == snippets.size() - 1);
          if (stopped || !ok) {
            status = stopped ? "interrupted" : "error";
            break;
          }
        }
      }
    } catch (Exception | LinkageError failed) {
      status = "error";
      error = failed.getClass().getName();
      tell(error, "the Java runner failed: " + failed + "\n");
    } finally {
      running = -1;
      Environment.restore(saved);
    }
    System.out.flush();
    System.err.flush();
    String name = status.equals("error") && error != null
        ? ",\"n\":" + Json.quote(error, new StringBuilder()) : "";
    emit("{\"k\":\"d\",\"id\":" + id + ",\"s\":\"" + status + "\",\"p\":false,\"c\":" + runs
        + name + "}");
  }

  /** The [start, end) of each snippet of the cell, or false (and why, on stderr). */
  private static boolean cut(String code, List<int[]> snippets) {
    SourceCodeAnalysis analysis = shell.sourceCodeAnalysis();
    int at = 0;
    while (true) {
      while (at < code.length() && Character.isWhitespace(code.charAt(at))) {
        at++;
      }
      if (at >= code.length()) {
        return true;
      }
      String rest = code.substring(at);
      SourceCodeAnalysis.CompletionInfo info = analysis.analyzeCompletion(rest);
      SourceCodeAnalysis.Completeness done = info.completeness();
      if (done == SourceCodeAnalysis.Completeness.EMPTY) {
        return true;
      }
      if (!done.isComplete() && done != SourceCodeAnalysis.Completeness.UNKNOWN) {
        String why = "reached end of input while parsing: this statement is never finished";
        error = "CompilationError";
        tell(error, "Error at line " + lineOf(code, at) + ":\n" + why + "\n");
        return false;
      }
      int end = code.length() - Math.min(info.remaining().length(), rest.length());
      if (rest.startsWith("/") && !rest.startsWith("/*") && !rest.startsWith("//")) {
        error = "CompilationError";
        tell(error,
            "Error at line " + lineOf(code, at) + ":\njshell commands (such as /vars) are not run here\n");
        return false;
      }
      snippets.add(new int[] {at, Math.max(end, at + 1)});
      at = Math.max(end, at + 1);
    }
  }

  /** Runs one snippet; false if it failed (told on stderr). The cell's ``last`` shows its value. */
  private static boolean evaluate(long id, String code, int[] snippet, boolean last) {
    List<SnippetEvent> results = shell.eval(code.substring(snippet[0], snippet[1]));
    long line = lineOf(code, snippet[0]);
    for (SnippetEvent result : results) {
      ORIGINS.put(result.snippet().id(), new long[] {id, line});
    }
    boolean ok = true;
    for (SnippetEvent result : results) {
      if (result.causeSnippet() != null) {
        continue;
      }
      if (result.status() == Snippet.Status.REJECTED) {
        ok = false;
        error = "CompilationError";
        tell(error, shell.diagnostics(result.snippet())
            .filter(Diag::isError)
            .map(diag -> compileError(code, snippet, diag))
            .collect(Collectors.joining()));
      } else if (result.exception() != null) {
        JShellException thrown = result.exception();
        error = thrown instanceof EvalException
            ? ((EvalException) thrown).getExceptionClassName() : thrown.getClass().getName();
        if (!stopped) {
          StringBuilder told = new StringBuilder();
          describe(result.exception(), told, id, "Exception ");
          tell(error, told.toString());
        }
        ok = false;
      } else if (result.snippet() instanceof DeclarationSnippet
          && result.status() != Snippet.Status.VALID) {
        DeclarationSnippet declared = (DeclarationSnippet) result.snippet();
        String missing = shell.unresolvedDependencies(declared).collect(Collectors.joining(", "));
        if (!missing.isEmpty()) {
          System.err.println(
              "note: " + declared.name() + " cannot be used until " + missing + " is declared");
        }
      } else if (last && result.value() != null && RESULTS.contains(result.snippet().subKind())
          && !code.substring(snippet[0], snippet[1]).strip().endsWith(";")) {
        System.out.println(result.value());
      }
    }
    return ok;
  }

  private static String compileError(String code, int[] snippet, Diag diag) {
    long start = diag.getStartPosition() >= 0 ? diag.getStartPosition() : diag.getPosition();
    int at = (int) Math.max(snippet[0], Math.min(snippet[1] - 1, snippet[0] + Math.max(start, 0)));
    int end = (int) Math.min(snippet[1], snippet[0] + Math.max(diag.getEndPosition(), start + 1));
    int from = code.lastIndexOf('\n', at - 1) + 1;
    int to = code.indexOf('\n', at);
    to = to < 0 ? code.length() : to;
    int width = Math.max(1, Math.min(end, to) - at);
    String caret = width == 1 ? "^" : "^" + "-".repeat(width - 2) + "^";
    return "Error at line " + lineOf(code, at) + ":\n" + diag.getMessage(Locale.ROOT) + "\n"
        + code.substring(from, to) + "\n" + " ".repeat(at - from) + caret + "\n";
  }

  private static void describe(Throwable error, StringBuilder told, long id, String lead) {
    if (error instanceof UnresolvedReferenceException) {
      DeclarationSnippet declared = ((UnresolvedReferenceException) error).getSnippet();
      String missing = shell.unresolvedDependencies(declared).collect(Collectors.joining(", "));
      told.append("Attempted to use ").append(declared.name())
          .append(", which cannot be used until ").append(missing).append(" is declared\n");
      return;
    }
    String kind = error instanceof EvalException
        ? ((EvalException) error).getExceptionClassName() : error.getClass().getName();
    told.append(lead).append(kind);
    if (error.getMessage() != null) {
      told.append(": ").append(error.getMessage());
    }
    told.append('\n');
    for (StackTraceElement frame : error.getStackTrace()) {
      String file = frame.getFileName();
      if (file != null && file.startsWith("#")) {
        String method = frame.getMethodName().isEmpty() ? "" : frame.getMethodName() + " ";
        told.append("\tat ").append(method).append('(')
            .append(where(file.substring(1), frame.getLineNumber(), id)).append(")\n");
      } else {
        told.append("\tat ").append(frame).append('\n');
      }
    }
    if (error.getCause() != null && error.getCause() != error) {
      describe(error.getCause(), told, id, "Caused by: ");
    }
  }

  /** A frame's place as a line of a cell: this run's, or an earlier one's. */
  private static String where(String snippet, int line, long id) {
    long[] origin = ORIGINS.get(snippet);
    if (origin == null || line < 1) {
      return "#" + snippet + ":" + line;
    }
    String earlier = origin[0] == id ? "" : " of an earlier run";
    return "line " + (origin[1] + line - 1) + earlier;
  }

  private static long lineOf(String code, int at) {
    return code.substring(0, at).chars().filter(c -> c == '\n').count() + 1;
  }

  // -- events ---------------------------------------------------------------------------
  // Events queue in PENDING and one writer thread writes them to the FIFO, so a flood of
  // output goes out in few writes while a lone line goes at once; consecutive output of one
  // stream is joined (up to JOIN characters) while it waits. Past ROOM characters waiting,
  // the code waits for the writer: the runtime reading slowly slows the code down.

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
        Json.quote(joinedError, PENDING.append("\"n\":")).append(",");
      }
      PENDING.append("\"d\":");
      Json.quote(JOINED, PENDING).append("}\n");
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

  private static void writeEvents() {
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
  private static void drain() {
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
      long id = running;
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

  /** Variables set in this process's environment for one run (children see them too). */
  static final class Environment {
    @SuppressWarnings("unchecked")
    private static Map<String, String> live() throws ReflectiveOperationException {
      Field inner = Class.forName("java.util.Collections$UnmodifiableMap").getDeclaredField("m");
      inner.setAccessible(true);
      return (Map<String, String>) inner.get(System.getenv());
    }

    static void set(Map<String, Object> values, Map<String, String> saved) throws Exception {
      Map<String, String> env = live();
      for (Map.Entry<String, Object> entry : values.entrySet()) {
        saved.putIfAbsent(entry.getKey(), env.get(entry.getKey()));
        env.put(entry.getKey(), String.valueOf(entry.getValue()));
      }
    }

    static void restore(Map<String, String> saved) {
      if (saved.isEmpty()) {
        return;
      }
      try {
        Map<String, String> env = live();
        saved.forEach((key, value) -> {
          if (value == null) {
            env.remove(key);
          } else {
            env.put(key, value);
          }
        });
      } catch (ReflectiveOperationException failed) {
        System.err.println("the environment could not be restored: " + failed);
      }
    }
  }

  /** Just enough JSON: the requests' objects in, quoted strings out. */
  static final class Json {
    private final String text;
    private int at;

    private Json(String text) {
      this.text = text;
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> object(String line) {
      try {
        Object value = new Json(line).value();
        return value instanceof Map ? (Map<String, Object>) value : null;
      } catch (RuntimeException unreadable) {
        return null;
      }
    }

    static StringBuilder quote(CharSequence text, StringBuilder out) {
      out.append('"');
      for (int i = 0; i < text.length(); i++) {
        char c = text.charAt(i);
        if (c == '"' || c == '\\') {
          out.append('\\').append(c);
        } else if (c == '\n') {
          out.append("\\n");
        } else if (c < 0x20 || Character.isSurrogate(c)) {
          boolean pair = Character.isHighSurrogate(c) && i + 1 < text.length()
              && Character.isLowSurrogate(text.charAt(i + 1));
          if (pair) {
            out.append(c).append(text.charAt(++i));
          } else {
            out.append(c < 0x20 ? String.format("\\u%04x", (int) c) : "\ufffd");
          }
        } else {
          out.append(c);
        }
      }
      return out.append('"');
    }

    private char next() {
      while (Character.isWhitespace(text.charAt(at))) {
        at++;
      }
      return text.charAt(at);
    }

    private Object value() {
      char c = next();
      if (c == '{') {
        Map<String, Object> map = new HashMap<>();
        at++;
        while (next() != '}') {
          String key = string();
          if (next() != ':') {
            throw new IllegalArgumentException("a colon");
          }
          at++;
          map.put(key, value());
          if (next() == ',') {
            at++;
          }
        }
        at++;
        return map;
      }
      if (c == '"') {
        return string();
      }
      int start = at;
      while (at < text.length() && "{}[],: \t".indexOf(text.charAt(at)) < 0) {
        at++;
      }
      String word = text.substring(start, at);
      return word.equals("true") || word.equals("false") ? (Object) Boolean.valueOf(word)
          : word.equals("null") ? null : (Object) Double.valueOf(word);
    }

    private String string() {
      StringBuilder out = new StringBuilder();
      at++;
      for (char c; (c = text.charAt(at++)) != '"'; ) {
        if (c != '\\') {
          out.append(c);
          continue;
        }
        char e = text.charAt(at++);
        switch (e) {
          case 'n': out.append('\n'); break;
          case 't': out.append('\t'); break;
          case 'r': out.append('\r'); break;
          case 'b': out.append('\b'); break;
          case 'f': out.append('\f'); break;
          case 'u': out.append((char) Integer.parseInt(text.substring(at, at + 4), 16)); at += 4; break;
          default: out.append(e);
        }
      }
      return out.toString();
    }
  }
}

// E2B's JS SDK against lmc serve, pointed at it by E2B_API_URL, E2B_SANDBOX_URL
// and E2B_API_KEY alone: what it saw is printed as one JSON object.
import { Sandbox } from '@e2b/code-interpreter'

const seen = {}
const sbx = await Sandbox.create({ timeoutMs: 120_000 })
try {
  const streamed = []
  const execution = await sbx.runCode('import sys\nprint("out")\nprint("err", file=sys.stderr)\n6 * 7', {
    onStdout: (m) => streamed.push(['stdout', m.line]),
    onStderr: (m) => streamed.push(['stderr', m.line]),
  })
  seen.text = execution.text
  seen.stdout = execution.logs.stdout
  seen.stderr = execution.logs.stderr
  seen.streamed = streamed
  const failed = await sbx.runCode('1 / 0')
  seen.error = failed.error ? { name: failed.error.name, value: failed.error.value } : null
  const js = await sbx.runCode('const a = [1, 2, 3]; a.map((x) => x * 2).join(",")', { language: 'js' })
  seen.js = js.text
  await sbx.files.write('/home/user/note.txt', 'from js')
  seen.read = await sbx.files.read('/home/user/note.txt')
  seen.listed = (await sbx.files.list('/home/user')).map((e) => e.name)
  const cmd = await sbx.commands.run('echo $((20 + 22)) && pwd && whoami')
  seen.command = { stdout: cmd.stdout, exitCode: cmd.exitCode }
  seen.running = await sbx.isRunning()
} finally {
  await sbx.kill()
}
seen.listedAfterKill = (await Sandbox.list().nextItems()).map((s) => s.sandboxId).includes(sbx.sandboxId)
process.stdout.write(JSON.stringify(seen) + '\n')

// The code editor: CodeMirror 6 (the bundle in codemirror.js), with a language
// switch and the running line highlighted as active_line messages arrive.
import {
  Compartment, Decoration, EditorState, EditorView, StateEffect, StateField, StreamLanguage,
  bracketMatching, defaultHighlightStyle, defaultKeymap, drawSelection, highlightActiveLine,
  history, historyKeymap, indentOnInput, indentWithTab, java, javascript, keymap, lineNumbers,
  python, r, shell, syntaxHighlighting, typescript,
} from "./codemirror.js";

const MODES = { python, shell, bash: shell, sh: shell, zsh: shell, javascript, typescript, r, java };
const setRunning = StateEffect.define();

// The running line (0: none), as a line decoration.
const running = StateField.define({
  create: () => Decoration.none,
  update(decorations, transaction) {
    decorations = decorations.map(transaction.changes);
    for (const effect of transaction.effects) {
      if (!effect.is(setRunning)) continue;
      const number = effect.value;
      if (number < 1 || number > transaction.state.doc.lines) return Decoration.none;
      const line = transaction.state.doc.line(number);
      const mark = Decoration.line({ class: "cm-running", attributes: { "data-line": String(number) } });
      return Decoration.set([mark.range(line.from)]);
    }
    return decorations;
  },
  provide: (field) => EditorView.decorations.from(field),
});

export function createEditor(parent, { text, onRun }) {
  const language = new Compartment();
  const view = new EditorView({
    parent,
    state: EditorState.create({
      doc: text,
      extensions: [
        lineNumbers(), history(), drawSelection(), indentOnInput(), bracketMatching(),
        highlightActiveLine(), syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
        keymap.of([{ key: "Mod-Enter", run: () => { onRun(); return true; } }, indentWithTab, ...defaultKeymap, ...historyKeymap]),
        language.of([]), running,
        EditorView.contentAttributes.of({ "aria-label": "code", id: "code" }),
        // Its style elements carry the page's nonce: the CSP allows no other inline style.
        EditorView.cspNonce.of(document.querySelector("meta[name=lmc-style-nonce]")?.content || ""),
      ],
    }),
  });
  return {
    get code() { return view.state.doc.toString(); },
    set code(value) { view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: value } }); },
    language(name) {
      const mode = MODES[name];
      view.dispatch({ effects: language.reconfigure(mode ? StreamLanguage.define(mode) : []) });
    },
    runningLine(number) {
      view.dispatch({ effects: setRunning.of(number) });
      if (number >= 1 && number <= view.state.doc.lines) {
        view.dispatch({ effects: EditorView.scrollIntoView(view.state.doc.line(number).from, { y: "nearest" }) });
      }
    },
  };
}

#!/usr/bin/env node
// scripts/llama-node.mjs: stock llama.cpp as an external engine, through the node-llama-cpp
// package (npm), for machines without a llama.cpp build. Users normally point memwall at their
// own llama.cpp build instead; this script exists so tests and CI can drive real llama.cpp code.
//
// usage: node scripts/llama-node.mjs MODEL.gguf PROMPT N_TOKENS THREADS SEED [--ignore-eos]
//
// Generates greedily (temperature 0; SEED is passed on but greedy decoding does not use it) and
// prints, like llama-completion:
//   stdout: the generated text, then one line for memwall's generic adapter (src/run/adapters.h):
//           memwall-tokens: decode=N prompt=M decode_ms=T decode_steps=N-1 prompt_ms=P load_ms=L
//   stderr: llama.cpp's own perf block (llama_perf_context_print: ...), which memwall's
//           llama-completion adapter reads; its warnings and errors
// decode counts the tokens that came out, including the one out of the prompt's forward pass;
// decode_ms covers the N-1 single-token forward passes after it (as llama.cpp's "eval time").
// Without --ignore-eos generation stops at an end-of-generation token, and decode says so.
//
// Where node-llama-cpp is looked for, first found wins:
//   $MEMWALL_NODE_LLAMA_DIR   a directory where `npm install node-llama-cpp` was run
//   scripts/llama-node/       `npm install --prefix scripts/llama-node --omit=optional`: its
//                             package.json pins node-llama-cpp and its x86-64 CPU binary
//                             (85 MB, about 10 s here; the binary is llama.cpp v0.5.0, and it
//                             neither downloads nor compiles anything when it runs)
// Exit codes follow memwall's: 0 ok, 1 the model failed to load, 2 bad usage, 3 node-llama-cpp
// absent or unusable here. Failures print "llama-node: error: ..." on stderr, which the
// llama-completion adapter reports as the cause.
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));

function usage(message) {
	process.stderr.write(`llama-node: error: ${message}\n` +
		"usage: node scripts/llama-node.mjs MODEL.gguf PROMPT N_TOKENS THREADS SEED [--ignore-eos]\n");
	process.exit(2);
}

function wholeNumber(text, name, min) {
	if (!/^[0-9]+$/.test(text) || Number(text) < min || !Number.isSafeInteger(Number(text)))
		usage(`${name} must be a whole number >= ${min}, got '${text}'`);
	return Number(text);
}

// The package's entry point, resolved from each candidate directory in turn.
async function loadNodeLlama() {
	const dirs = [process.env.MEMWALL_NODE_LLAMA_DIR, path.join(here, "llama-node")].filter(Boolean);
	for (const dir of dirs) {
		try {
			const entry = createRequire(path.join(path.resolve(dir), "package.json")).resolve("node-llama-cpp");
			return await import(pathToFileURL(entry).href);
		} catch (e) {
			if (e.code !== "MODULE_NOT_FOUND")
				throw e;
		}
	}
	process.stderr.write(`llama-node: error: node-llama-cpp not found in ${dirs.join(" or ")}: ` +
		"run `npm install --prefix scripts/llama-node --omit=optional` or set MEMWALL_NODE_LLAMA_DIR\n");
	process.exit(3);
}

const args = process.argv.slice(2);
const ignoreEos = args.includes("--ignore-eos");
const positional = args.filter((a) => a !== "--ignore-eos");
if (positional.length === 1 && (positional[0] === "--help" || positional[0] === "-h")) {
	process.stdout.write("usage: node scripts/llama-node.mjs MODEL.gguf PROMPT N_TOKENS THREADS SEED [--ignore-eos]\n");
	process.exit(0);
}
if (positional.length !== 5)
	usage(`expected 5 arguments, got ${positional.length}`);
const [modelPath, prompt] = positional;
const nTokens = wholeNumber(positional[2], "N_TOKENS", 1);
const threads = wholeNumber(positional[3], "THREADS", 1);
const seed = wholeNumber(positional[4], "SEED", 0);

const { getLlama } = await loadNodeLlama();

// llama.cpp's log: forward warnings, errors and the perf block; drop the load chatter.
// node-llama-cpp hands over messages without their newline.
const logger = (level, message) => {
	const text = String(message).replace(/\n$/, "");
	if (level === "warn" || level === "error" || level === "fatal" || text.startsWith("llama_perf_"))
		process.stderr.write(text + "\n");
};

let llama, model, context;
try {
	// build: "never": use the prebuilt binary or fail; never download or compile at run time.
	llama = await getLlama({ gpu: false, build: "never", logLevel: "info", logger });
} catch (e) {
	process.stderr.write(`llama-node: error: no usable llama.cpp binary in node-llama-cpp: ${e.message}\n`);
	process.exit(3);
}
const t0 = performance.now();
try {
	model = await llama.loadModel({ modelPath });
} catch (e) {
	process.stderr.write(`llama-node: error: failed to load model ${modelPath}: ${e.message}\n`);
	process.exit(1);
}
const tokens = model.tokenize(prompt);
if (model.shouldPrependBosToken && model.tokens.bos !== null && tokens[0] !== model.tokens.bos)
	tokens.unshift(model.tokens.bos); // as llama-completion does
context = await model.createContext({
	contextSize: Math.min(model.trainContextSize, tokens.length + nTokens + 1),
	threads, batchSize: Math.max(tokens.length, 2), performanceTracking: true,
});
const loadMs = performance.now() - t0;
if (tokens.length + nTokens > context.contextSize) {
	process.stderr.write(`llama-node: error: ${tokens.length} prompt + ${nTokens} generated tokens do not fit the ` +
		`model's context of ${context.contextSize}\n`);
	process.exit(2);
}

// The generator decodes the prompt, yields the first token, and decodes each yielded token on
// the next step; stopping after the N-th yield leaves it undecoded, as llama-completion does.
const sequence = context.getSequence();
const out = [];
const tStart = performance.now();
let tFirst = tStart, tLast = tStart;
for await (const token of sequence.evaluate(tokens, { temperature: 0, seed })) {
	tLast = performance.now();
	if (out.length === 0)
		tFirst = tLast;
	out.push(token);
	if (out.length >= nTokens || (!ignoreEos && model.isEogToken(token)))
		break;
}
process.stdout.write(model.detokenize(out) + "\n");
await context.printTimings();
const fmt = (ms) => ms.toFixed(3);
process.stdout.write(`memwall-tokens: decode=${out.length} prompt=${tokens.length}` +
	` decode_ms=${fmt(tLast - tFirst)} decode_steps=${Math.max(out.length - 1, 0)}` +
	` prompt_ms=${fmt(tFirst - tStart)} load_ms=${fmt(loadMs)}\n`);
await context.dispose();
await model.dispose();
await llama.dispose();

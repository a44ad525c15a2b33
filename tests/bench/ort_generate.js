#!/usr/bin/env node
// The peer of `tessera generate`: the same token-by-token loop in ONNX Runtime (onnxruntime-node,
// CPU) on a decoder exported with a KV cache (input_ids and past key/values in; logits and presents
// out, tessera generate's interface), greedy, the presents fed back as the next past. Prints one
// JSON line {generated, prompt_ms, tokens_per_second, median_token_ms, total_ms}.
//
// Usage: node tests/bench/ort_generate.js MODEL.onnx --prompt ID,ID,... [--tokens N] [--threads T]
'use strict';

const { loadOrt } = require('../ort_util.js');

function parseArgs(argv) {
  const opts = { model: null, prompt: null, tokens: 32, threads: 2 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    switch (a) {
      case '--prompt': opts.prompt = value().split(',').map((s) => {
        if (!/^-?\d+$/.test(s)) throw new Error(`--prompt: '${s}' is not a token id`);
        return BigInt(s);
      }); break;
      case '--tokens': opts.tokens = Number(value()); break;
      case '--threads': opts.threads = Number(value()); break;
      default:
        if (a.startsWith('-')) throw new Error(`unknown flag ${a}`);
        opts.model = a;
    }
  }
  if (!opts.model || !opts.prompt) throw new Error('need MODEL.onnx and --prompt ID,ID,...');
  if (!Number.isInteger(opts.tokens) || opts.tokens < 1) throw new Error('--tokens must be a positive integer');
  return opts;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const ort = loadOrt();
  const session = await ort.InferenceSession.create(opts.model, {
    intraOpNumThreads: opts.threads, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all' });
  const ids = session.inputNames.find((n) => n === 'input_ids') || session.inputNames[0];
  const pastNames = session.inputNames.filter((n) => n !== ids);
  const meta = session.inputMetadata ? (Array.isArray(session.inputMetadata) ? session.inputMetadata : null) : null;
  // Heads and head size: read from the first run's presents (run the prompt with an empty cache
  // of the shape [1, H, 0, D], where H and D come from a probe with the names' metadata or 4 x 64).
  let heads = 4, headSize = 64;
  if (meta) {
    const m = meta.find((x) => x.name === pastNames[0]);
    if (m && m.shape && typeof m.shape[1] === 'number' && typeof m.shape[3] === 'number') [heads, headSize] = [m.shape[1], m.shape[3]];
  }
  let past = pastNames.map(() => new ort.Tensor('float32', new Float32Array(0), [1, heads, 0, headSize]));
  const generated = [];
  const stepMs = [];
  let promptMs = 0;
  let last = opts.prompt;
  for (let step = 0; step < opts.tokens; step++) {
    const feeds = { [ids]: new ort.Tensor('int64', BigInt64Array.from(last), [1, last.length]) };
    pastNames.forEach((n, i) => { feeds[n] = past[i]; });
    const t0 = process.hrtime.bigint();
    const out = await session.run(feeds);
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    if (step === 0) promptMs = ms; else stepMs.push(ms);
    const logits = out[session.outputNames[0]];
    const vocab = logits.dims[2];
    const row = logits.data.subarray((last.length - 1) * vocab, last.length * vocab);
    let best = 0;
    for (let v = 1; v < vocab; v++) if (row[v] > row[best]) best = v;
    generated.push(best);
    past = session.outputNames.slice(1).map((n) => out[n]);
    last = [BigInt(best)];
  }
  const sorted = stepMs.slice().sort((a, b) => a - b);
  const total = stepMs.reduce((a, b) => a + b, 0);
  process.stdout.write(JSON.stringify({ generated, prompt_ms: promptMs, new_tokens: generated.length,
    tokens_per_second: total > 0 ? stepMs.length / (total / 1e3) : 0,
    median_token_ms: sorted.length ? sorted[Math.floor(sorted.length / 2)] : 0, total_ms: total }) + '\n');
  return 0;
}

main().then((rc) => process.exit(rc), (e) => { process.stderr.write(`ort_generate: ${e.message}\n`); process.exit(1); });

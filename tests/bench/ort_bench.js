#!/usr/bin/env node
// Times one ONNX model in ONNX Runtime (onnxruntime-node, CPU execution provider) on .npy inputs and
// prints {"median_ms", "min_ms", ...} as one JSON line; optionally writes the outputs as .npy.
//
// Usage: node tests/bench/ort_bench.js MODEL.onnx --input [NAME=]FILE.npy ... [--threads N]
//          [--runs R] [--warmup W] [--output FILE.npy] [--output-dir DIR]
//   --input       repeatable, one per graph input; without NAME= it feeds the model's first input
//   --threads     intraOpNumThreads (default 2); interOpNumThreads is always 1
//   --runs        timed runs after warm-up (default 20); --warmup untimed runs first (default 5)
//   --output      write the first output to FILE.npy; --output-dir writes every output to
//                 DIR/<output name>.npy, the layout `tessera run --output-dir` uses
// onnxruntime-node is found through NODE_PATH (scripts/bench.sh points it at build/npm/node_modules)
// or, failing that, in build/npm/node_modules next to this checkout.
// Exit status: 0 on success, 2 on bad arguments or files, 1 when ONNX Runtime fails.
'use strict';

const fs = require('fs');
const path = require('path');
const { readNpy, writeNpy, loadOrt } = require('../ort_util.js');

// ---- arguments ----

function parseArgs(argv) {
  const opts = { model: null, inputs: [], threads: 2, runs: 20, warmup: 5,
    output: null, outputDir: null };
  const needValue = (i, flag) => {
    if (i + 1 >= argv.length) throw new Error(`${flag} needs a value`);
    return argv[i + 1];
  };
  const positiveInt = (s, flag, min) => {
    const n = Number(s);
    if (!Number.isInteger(n) || n < min) throw new Error(`${flag} must be an integer >= ${min}, got ${s}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    switch (a) {
      case '--input': {
        const v = needValue(i, a);
        const eq = v.indexOf('=');
        opts.inputs.push(eq > 0 ? { name: v.slice(0, eq), file: v.slice(eq + 1) } : { name: null, file: v });
        i++;
        break;
      }
      case '--threads': opts.threads = positiveInt(needValue(i, a), a, 1); i++; break;
      case '--runs': opts.runs = positiveInt(needValue(i, a), a, 1); i++; break;
      case '--warmup': opts.warmup = positiveInt(needValue(i, a), a, 0); i++; break;
      case '--output': opts.output = needValue(i, a); i++; break;
      case '--output-dir': opts.outputDir = needValue(i, a); i++; break;
      case '-h': case '--help': opts.help = true; break;
      default:
        if (a.startsWith('-')) throw new Error(`unknown flag ${a}`);
        if (opts.model !== null) throw new Error(`one model only (got ${opts.model} and ${a})`);
        opts.model = a;
    }
  }
  if (!opts.help && (opts.model === null || opts.inputs.length === 0)) {
    throw new Error('need MODEL.onnx and --input [NAME=]FILE.npy');
  }
  return opts;
}


function median(sorted) {
  const n = sorted.length;
  return n % 2 === 1 ? sorted[(n - 1) / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

async function main() {
  let opts;
  let ort;
  let xs;
  try {
    opts = parseArgs(process.argv.slice(2));
    if (opts.help) {
      process.stdout.write(fs.readFileSync(__filename, 'utf8').split('\n').slice(1, 14)
        .map((l) => l.replace(/^\/\/ ?/, '')).join('\n') + '\n');
      return 0;
    }
    if (!fs.existsSync(opts.model)) throw new Error(`${opts.model}: no such file`);
    xs = opts.inputs.map((inp) => ({ name: inp.name, tensor: readNpy(inp.file) }));
    ort = loadOrt();
  } catch (e) {
    process.stderr.write(`ort_bench: ${e.message}\n`);
    return 2;
  }

  try {
    const t0 = process.hrtime.bigint();
    const session = await ort.InferenceSession.create(opts.model, {
      executionProviders: ['cpu'],
      graphOptimizationLevel: 'all',
      intraOpNumThreads: opts.threads,
      interOpNumThreads: 1,
      executionMode: 'sequential',
    });
    const loadMs = Number(process.hrtime.bigint() - t0) / 1e6;
    const feeds = {};
    for (const { name, tensor } of xs) {
      const inputName = name || session.inputNames[0];
      if (!session.inputNames.includes(inputName)) {
        process.stderr.write(`ort_bench: the model has no input ${inputName} ` +
          `(inputs: ${session.inputNames.join(', ')})\n`);
        return 2;
      }
      feeds[inputName] = new ort.Tensor(tensor.type, tensor.data, tensor.dims);
    }

    let outputs = null;
    for (let i = 0; i < opts.warmup; i++) outputs = await session.run(feeds);
    const times = [];
    for (let i = 0; i < opts.runs; i++) {
      const t = process.hrtime.bigint();
      outputs = await session.run(feeds);
      times.push(Number(process.hrtime.bigint() - t) / 1e6);
    }

    if (opts.output) writeNpy(opts.output, outputs[session.outputNames[0]]);
    if (opts.outputDir) {
      fs.mkdirSync(opts.outputDir, { recursive: true });
      for (const name of session.outputNames) {
        writeNpy(path.join(opts.outputDir, `${name}.npy`), outputs[name]);
      }
    }
    const sorted = [...times].sort((a, b) => a - b);
    const round = (v) => Math.round(v * 1000) / 1000;
    process.stdout.write(JSON.stringify({
      median_ms: round(median(sorted)),
      min_ms: round(sorted[0]),
      mean_ms: round(times.reduce((a, b) => a + b, 0) / times.length),
      load_ms: round(loadMs),
      runs: opts.runs,
      threads: opts.threads,
    }) + '\n');
    return 0;
  } catch (e) {
    process.stderr.write(`ort_bench: ${opts.model}: ${e.message}\n`);
    return 1;
  }
}

main().then((code) => { process.exitCode = code; });

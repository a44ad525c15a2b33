#!/usr/bin/env node
// Runs an ONNX model exported by Tessera in ONNX Runtime (onnxruntime-node, CPU) and compares its
// outputs with the ones Tessera computed; prints one line per output with the largest error.
//
// Usage: node tests/formats/ort_check.js MODEL.onnx --inputs DIR --expected DIR [--rtol R] [--atol A]
//   --inputs    DIR/<input name>.npy for every model input
//   --expected  DIR/<output name>.npy for every model output (the layout of `tessera run --output-dir`)
//   --rtol, --atol  float tolerance |got - want| <= atol + rtol * |want| (default 1e-4, 1e-5);
//                   integers and bool must match exactly, NaN matches NaN
// onnxruntime-node is found through NODE_PATH or in build/npm/node_modules next to this checkout
// (scripts/npm.sh installs it there).
// Exit status: 0 when every output matches, 1 on a mismatch or an ONNX Runtime failure, 2 on bad
// arguments or files.
'use strict';

const fs = require('fs');
const path = require('path');
const { readNpy, loadOrt } = require('../ort_util.js');

function parseArgs(argv) {
  const opts = { model: null, inputs: null, expected: null, rtol: 1e-4, atol: 1e-5 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    const number = (s) => {
      const n = Number(s);
      if (!Number.isFinite(n) || n < 0) throw new Error(`${a} must be a non-negative number, got ${s}`);
      return n;
    };
    switch (a) {
      case '--inputs': opts.inputs = value(); break;
      case '--expected': opts.expected = value(); break;
      case '--rtol': opts.rtol = number(value()); break;
      case '--atol': opts.atol = number(value()); break;
      case '-h': case '--help': opts.help = true; break;
      default:
        if (a.startsWith('-')) throw new Error(`unknown flag ${a}`);
        if (opts.model !== null) throw new Error(`one model only (got ${opts.model} and ${a})`);
        opts.model = a;
    }
  }
  if (!opts.help && (!opts.model || !opts.inputs || !opts.expected)) {
    throw new Error('need MODEL.onnx, --inputs DIR and --expected DIR');
  }
  return opts;
}


// {ok, maxAbs, maxRel, bad, first} comparing ORT's tensor with the expected .npy contents.
function compare(got, want, opts) {
  const isFloat = want.type === 'float32' || want.type === 'float64';
  let maxAbs = 0, maxRel = 0, bad = 0, first = -1;
  for (let i = 0; i < want.data.length; i++) {
    const a = Number(got.data[i]), b = Number(want.data[i]);
    let ok;
    if (!isFloat) {
      ok = a === b;
    } else if (Number.isNaN(a) || Number.isNaN(b)) {
      ok = Number.isNaN(a) && Number.isNaN(b);
    } else if (!Number.isFinite(a) || !Number.isFinite(b)) {
      ok = a === b;
    } else {
      const d = Math.abs(a - b);
      maxAbs = Math.max(maxAbs, d);
      if (b !== 0) maxRel = Math.max(maxRel, d / Math.abs(b));
      ok = d <= opts.atol + opts.rtol * Math.abs(b);
    }
    if (!ok && bad++ === 0) first = i;
  }
  return { ok: bad === 0, maxAbs, maxRel, bad, first };
}

async function main() {
  let opts, ort;
  const feeds = {};
  let session;
  try {
    opts = parseArgs(process.argv.slice(2));
    if (opts.help) {
      process.stdout.write(fs.readFileSync(__filename, 'utf8').split('\n').slice(1, 14)
        .map((l) => l.replace(/^\/\/ ?/, '')).join('\n') + '\n');
      return 0;
    }
    if (!fs.existsSync(opts.model)) throw new Error(`${opts.model}: no such file`);
    ort = loadOrt();
  } catch (e) {
    process.stderr.write(`ort_check: ${e.message}\n`);
    return 2;
  }
  const label = path.basename(opts.model);
  try {
    session = await ort.InferenceSession.create(opts.model, {
      executionProviders: ['cpu'], graphOptimizationLevel: 'all', intraOpNumThreads: 1, interOpNumThreads: 1,
    });
  } catch (e) {
    process.stdout.write(`FAIL ${label}: ONNX Runtime cannot load it: ${e.message.split('\n')[0]}\n`);
    return 1;
  }
  try {
    for (const name of session.inputNames) {
      const x = readNpy(path.join(opts.inputs, `${name}.npy`));
      feeds[name] = new ort.Tensor(x.type, x.data, x.dims);
    }
  } catch (e) {
    process.stderr.write(`ort_check: ${e.message}\n`);
    return 2;
  }
  let outputs;
  try {
    outputs = await session.run(feeds);
  } catch (e) {
    process.stdout.write(`FAIL ${label}: ONNX Runtime failed to run it: ${e.message.split('\n')[0]}\n`);
    return 1;
  }
  let failed = 0;
  for (const name of session.outputNames) {
    let want;
    try {
      want = readNpy(path.join(opts.expected, `${name}.npy`));
    } catch (e) {
      process.stderr.write(`ort_check: ${e.message}\n`);
      return 2;
    }
    const got = outputs[name];
    const gotDims = Array.from(got.dims, Number);
    const shape = `[${want.dims.join(', ')}]`;
    if (got.type !== want.type || gotDims.join(',') !== want.dims.join(',')) {
      process.stdout.write(`FAIL ${label}: output ${name} is ${got.type}[${gotDims.join(', ')}], ` +
        `Tessera gave ${want.type}${shape}\n`);
      failed++;
      continue;
    }
    const r = compare(got, want, opts);
    const errs = `max abs error ${r.maxAbs.toExponential(2)}, max rel error ${r.maxRel.toExponential(2)}`;
    if (r.ok) {
      process.stdout.write(`ok   ${label}: output ${name} ${want.type}${shape}: ${errs}\n`);
    } else {
      failed++;
      process.stdout.write(`FAIL ${label}: output ${name} ${want.type}${shape}: ${r.bad} of ${want.data.length} ` +
        `elements differ, first at ${r.first} (ORT ${got.data[r.first]}, Tessera ${want.data[r.first]}); ${errs}\n`);
    }
  }
  return failed === 0 ? 0 : 1;
}

main().then((code) => { process.exitCode = code; });

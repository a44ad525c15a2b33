// Shared by the node scripts that run ONNX Runtime (tests/bench/ort_bench.js,
// tests/formats/ort_check.js): .npy files in and out as onnxruntime tensors, and finding
// onnxruntime-node (NODE_PATH, or build/npm/node_modules next to this checkout, where
// scripts/npm.sh installs it).
'use strict';

const fs = require('fs');
const path = require('path');

// .npy reading and writing (format versions 1-3, C order, little-endian numeric dtypes).

// descr -> [TypedArray constructor, onnxruntime tensor type]
const kDtypes = {
  '<f4': [Float32Array, 'float32'],
  '<f8': [Float64Array, 'float64'],
  '<i4': [Int32Array, 'int32'],
  '<i8': [BigInt64Array, 'int64'],
  '|u1': [Uint8Array, 'uint8'],
  '|i1': [Int8Array, 'int8'],
  '|b1': [Uint8Array, 'bool'],
};

// Returns {type, dims, data} for an .npy file; throws Error with a message naming the file.
function readNpy(file) {
  const buf = fs.readFileSync(file);
  const fail = (why) => { throw new Error(`${file}: ${why}`); };
  if (buf.length < 10 || buf.readUInt8(0) !== 0x93 || buf.toString('latin1', 1, 6) !== 'NUMPY') {
    fail('not an .npy file (bad magic)');
  }
  const major = buf.readUInt8(6);
  if (major < 1 || major > 3) fail(`unsupported .npy version ${major}`);
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const headerStart = major === 1 ? 10 : 12;
  if (headerStart + headerLen > buf.length) fail('truncated header');
  const header = buf.toString('latin1', headerStart, headerStart + headerLen);
  const descr = /'descr'\s*:\s*'([^']+)'/.exec(header);
  const fortran = /'fortran_order'\s*:\s*(True|False)/.exec(header);
  const shape = /'shape'\s*:\s*\(([^)]*)\)/.exec(header);
  if (!descr || !fortran || !shape) fail(`malformed header ${JSON.stringify(header)}`);
  if (fortran[1] === 'True') fail('Fortran-order arrays are not supported');
  const dtype = kDtypes[descr[1]];
  if (!dtype) fail(`unsupported dtype ${descr[1]}`);
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s.length > 0).map(Number);
  if (dims.some((d) => !Number.isInteger(d) || d < 0)) fail(`bad shape (${shape[1]})`);
  const count = dims.reduce((a, b) => a * b, 1);
  const [Ctor, type] = dtype;
  const dataStart = headerStart + headerLen;
  if (buf.length - dataStart !== count * Ctor.BYTES_PER_ELEMENT) {
    fail(`expected ${count * Ctor.BYTES_PER_ELEMENT} data bytes, found ${buf.length - dataStart}`);
  }
  // Copy into a fresh, aligned buffer (the file's data offset need not be a multiple of 8).
  const data = new Ctor(count);
  new Uint8Array(data.buffer).set(buf.subarray(dataStart));
  return { type, dims, data };
}

// Writes an onnxruntime Tensor (numeric) as a version 1 .npy file.
function writeNpy(file, tensor) {
  const descr = Object.keys(kDtypes).find((k) => kDtypes[k][1] === tensor.type);
  if (!descr) throw new Error(`${file}: cannot write tensor type ${tensor.type}`);
  const dims = Array.from(tensor.dims, Number);
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  // magic (6) + version (2) + length (2) + header + '\n' must be a multiple of 64.
  const pad = 64 - ((10 + header.length + 1) % 64);
  header += ' '.repeat(pad % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre.writeUInt8(0x93, 0);
  pre.write('NUMPY', 1, 'latin1');
  pre.writeUInt8(1, 6);
  pre.writeUInt8(0, 7);
  pre.writeUInt16LE(header.length, 8);
  const data = tensor.data;
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'),
    Buffer.from(data.buffer, data.byteOffset, data.byteLength)]));
}

function loadOrt() {
  try {
    return require('onnxruntime-node');
  } catch (e) {
    const local = path.resolve(__dirname, '..', 'build', 'npm', 'node_modules', 'onnxruntime-node');
    try {
      return require(local);
    } catch (e2) {
      throw new Error('onnxruntime-node not found: run scripts/npm.sh (installs it into build/npm) ' +
        'or set NODE_PATH to the node_modules that holds it');
    }
  }
}

module.exports = { kDtypes, readNpy, writeNpy, loadOrt };

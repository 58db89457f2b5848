// Writes mlkem768_vectors.txt, the ML-KEM-768 known answers of tests/diff/mlkem_diff_test.c,
// from @noble/post-quantum (an independent implementation of FIPS 203). Run once; the output
// is committed. How it was made (Node 20, npm registry):
//   mkdir /tmp/noble && cd /tmp/noble && npm init -y && npm install @noble/post-quantum@0.7.1
//   NODE_PATH=/tmp/noble/node_modules node --experimental-default-type=module \
//       tests/diff/mlkem768_vectors.mjs 100 > tests/diff/mlkem768_vectors.txt
// (or copy this file into /tmp/noble and run it there).
import { ml_kem768 } from '@noble/post-quantum/ml-kem.js';
import { sha3_256 } from '@noble/hashes/sha3.js';
import { randomBytes } from 'node:crypto';

const hex = (b) => Buffer.from(b).toString('hex');
const count = Number(process.argv[2] || 100);
const out = [];
out.push('# ML-KEM-768 (FIPS 203) known answers from @noble/post-quantum 0.7.1 (tests/diff/mlkem768_vectors.mjs)');
out.push('# one vector a line, hex, space-separated:');
out.push('#   d z m sha3_256(ek) sha3_256(dk) sha3_256(ct) ss ss_reject');
out.push('# (ek, dk) = ML-KEM.KeyGen_internal(d, z) (noble keygen(d || z)); (ss, ct) = Encaps_internal(ek, m);');
out.push('# ss_reject = Decaps(dk, ct2), ct2 = ct with byte (37 * n) % 1088 XOR 0x01 (n: the vector number, from 0):');
out.push('# the implicit rejection value J(z || ct2). Lines "full" carry ek, dk and ct whole.');
for (let i = 0; i < count; i++) {
  const d = randomBytes(32), z = randomBytes(32), m = randomBytes(32);
  const { publicKey: ek, secretKey: dk } = ml_kem768.keygen(Buffer.concat([d, z]));
  const { cipherText: ct, sharedSecret: ss } = ml_kem768.encapsulate(ek, m);
  const ss2 = ml_kem768.decapsulate(ct, dk);
  if (hex(ss2) !== hex(ss)) throw new Error('noble decapsulate disagrees');
  const ct2 = Uint8Array.from(ct);
  ct2[(37 * i) % 1088] ^= 1;
  const rej = ml_kem768.decapsulate(ct2, dk);
  out.push([d, z, m, sha3_256(ek), sha3_256(dk), sha3_256(ct), ss, rej].map(hex).join(' '));
  if (i < 2) out.push(['full', hex(ek), hex(dk), hex(ct)].join(' '));
}
process.stdout.write(out.join('\n') + '\n');

// Tokenization speed of the references on ~10 MB of mixed text, to compare with
// `oxinfer tokenize --bench FILE --model MODEL` on the same file and machine.
//
// Usage: node tests/reference/tokenizer_bench.mjs [TEST_DATA_DIR] [MODEL_NAME]
// Writes TEST_DATA_DIR/bench-mixed-10mb.txt (deterministic) when it is missing, then encodes it
// three times, line by line, with @huggingface/tokenizers (JavaScript) and with the npm `tokenizers` (Rust binding).
import fs from 'fs';
import path from 'path';
import { createRequire } from 'module';
import { fileURLToPath } from 'url';

const here = path.dirname(fileURLToPath(import.meta.url));
const dataDir = path.resolve(process.argv[2] || path.join(here, '..', '..', 'build', 'test-data'));
const modelName = process.argv[3] || 'qwen3';
const modules = path.join(dataDir, 'npm', 'node_modules');
const textFile = path.join(dataDir, 'bench-mixed-10mb.txt');

if (!fs.existsSync(textFile)) {
  const samples = [
    'The quick brown fox jumps over the lazy dog, and then it runs back home before the rain starts.',
    "I'm sure they'll say it's fine; we've done this before, haven't we? DON'T worry about it.",
    'Ça va? Œuvre, naïve façade, São Paulo, Dvořák, Ångström, Łódź, İstanbul.',
    'Привет, как дела? Съешь же ещё этих мягких французских булок, да выпей чаю.',
    'Καλημέρα κόσμε, η γλώσσα μας είναι όμορφη.', 'مرحبا بالعالم، كيف حالك اليوم؟', 'שלום עולם, מה שלומך?',
    'नमस्ते दुनिया, यह एक परीक्षण वाक्य है।', 'สวัสดีชาวโลก ภาษาไทยไม่มีช่องว่างระหว่างคำ',
    '你好，世界！我爱自然语言处理，这是一个测试句子。', 'こんにちは世界、カタカナとひらがなと漢字のテスト。', '안녕하세요 세계, 한국어 텍스트입니다.',
    '👍 Great job! 👨‍👩‍👧‍👦 🇫🇷🇩🇪 👋🏽 🏳️‍🌈',
    'def tokenize(text):\n\tfor i, word in enumerate(text.split()):\n\t\tyield i, word  # comment\n',
    'int main(void) {\n    printf("%d\\n", 42);\n    return 0;\n}\n',
    '{"id": 12345, "values": [1.5, 2.25, 3.125], "name": "example", "ok": true}',
    'Prices rose 3.7% to $1,234,567.89 on 2024-03-15T09:30:00Z, per report #42.',
  ];
  let seed = 42;
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  const parts = [];
  let size = 0;
  while (size < 10 * 1000 * 1000) {
    let line = samples[Math.floor(random() * samples.length)];
    if (random() < 0.3) line += ' ' + Math.floor(random() * 1e6);
    line += random() < 0.2 ? '\n\n' : ' ';
    parts.push(line);
    size += Buffer.byteLength(line);
  }
  fs.writeFileSync(textFile, parts.join(''));
}

const text = fs.readFileSync(textFile, 'utf8');
// Encoded line by line (each line with its newline), as `oxinfer tokenize --bench` does: both
// references slow down sharply on one 10 MB string.
const lines = text.match(/[^\n]*\n|[^\n]+$/g);
const megabytes = Buffer.byteLength(text) / 1e6;
const folder = path.join(dataDir, 'tokenizers', modelName);
const tokenizerJson = JSON.parse(fs.readFileSync(path.join(folder, 'tokenizer.json'), 'utf8'));
const configJson = JSON.parse(fs.readFileSync(path.join(folder, 'tokenizer_config.json'), 'utf8'));

function report(name, times, count, cpu) {
  const best = Math.min(...times);
  const bestCpu = Math.min(...cpu);
  console.log(`${name}: ${megabytes.toFixed(2)} MB, ${count} tokens; first ${times[0].toFixed(3)} s (${(megabytes / times[0]).toFixed(2)} MB/s), best ${best.toFixed(3)} s (${(megabytes / best).toFixed(2)} MB/s); best CPU time ${bestCpu.toFixed(3)} s (${(megabytes / bestCpu).toFixed(2)} MB/s of CPU time)`);
}
const cpuNow = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };

const js = await import(path.join(modules, '@huggingface', 'tokenizers', 'dist', 'tokenizers.mjs'));
const jsTokenizer = new js.Tokenizer(tokenizerJson, configJson);
let times = [], cpu = [], count = 0;
for (let run = 0; run < 3; ++run) {
  const start = process.hrtime.bigint();
  const cpuStart = cpuNow();
  count = 0;
  for (const line of lines) count += jsTokenizer.encode(line).ids.length;
  times.push(Number(process.hrtime.bigint() - start) / 1e9);
  cpu.push(cpuNow() - cpuStart);
}
report(`@huggingface/tokenizers ${modelName}`, times, count, cpu);

const require = createRequire(path.join(dataDir, 'npm', 'package.json'));
const rust = require('tokenizers');
const rustTokenizer = rust.Tokenizer.fromFile(path.join(folder, 'tokenizer.json'));
times = [];
cpu = [];
for (let run = 0; run < 3; ++run) {
  const start = process.hrtime.bigint();
  const cpuStart = cpuNow();
  count = 0;
  for (const line of lines) count += rustTokenizer.encodeSync ? rustTokenizer.encodeSync(line).getIds().length : (await rustTokenizer.encode(line, null, { addSpecialTokens: true })).getIds().length;
  times.push(Number(process.hrtime.bigint() - start) / 1e9);
  cpu.push(cpuNow() - cpuStart);
}
report(`tokenizers (Rust binding) ${modelName}`, times, count, cpu);
console.log(`text: ${textFile}`);

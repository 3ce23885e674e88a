// The official `openai` npm client against a running `ckjit serve` (started by openai_client.sh):
// what an OpenAI user's code does must work, and what ckjit refuses must come back as the client's
// typed errors. Exits non-zero on the first failure, printing what differed.
//   node openai_client.cjs OPENAI_PACKAGE_DIR BASE_URL API_KEY IMAGE.png
'use strict';
const fs = require('fs');
const [pkg, baseURL, apiKey, imagePath] = process.argv.slice(2);
const { OpenAI, APIError, AuthenticationError, BadRequestError } = require(pkg);

function check(ok, what) {
  if (!ok) throw new Error('openai client test: ' + what);
}

async function main() {
  const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 120000 });

  const models = await client.models.list();
  check(models.data.length === 1, 'one model listed');
  const model = models.data[0].id;

  // Chat with an image (a data: URI), the system message as the newer "developer" role.
  const png = fs.readFileSync(imagePath).toString('base64');
  const chat = await client.chat.completions.create({
    model,
    messages: [
      { role: 'developer', content: 'Read the page.' },
      { role: 'user', content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${png}` } },
                                { type: 'text', text: 'What does it say?' }] },
    ],
    max_completion_tokens: 5, seed: 3, temperature: 0.7, top_p: 0.9, presence_penalty: 0.5, frequency_penalty: 0.2,
  });
  check(chat.object === 'chat.completion', 'a chat.completion object');
  check(chat.choices.length === 1 && chat.choices[0].message.role === 'assistant', 'one assistant choice');
  check(['stop', 'length'].includes(chat.choices[0].finish_reason), 'finish_reason stop or length');
  check(chat.usage.completion_tokens <= 5 && chat.usage.prompt_tokens > 9, 'usage counts the image rows and the answer');

  // Streaming with include_usage: content deltas, one finish, then the usage-only chunk.
  const stream = await client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'Count to three' }], max_tokens: 6, seed: 3, stream: true,
    stream_options: { include_usage: true }, logit_bias: { '15': -100 },
  });
  let text = '', finishes = 0, usage = null;
  for await (const chunk of stream) {
    if (chunk.choices.length === 0) { usage = chunk.usage; continue; }
    check(usage === null, 'the usage chunk comes last');
    text += chunk.choices[0].delta.content || '';
    if (chunk.choices[0].finish_reason) finishes += 1;
  }
  check(finishes === 1, 'exactly one finish_reason');
  check(usage && usage.completion_tokens >= 1 && usage.completion_tokens <= 6, 'the usage-only chunk');
  // The same request without streaming gives the same text (same seed).
  const same = await client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'Count to three' }], max_tokens: 6, seed: 3, logit_bias: { '15': -100 },
  });
  check(same.choices[0].message.content === text, `streamed text equals the plain one: "${text}" vs "${same.choices[0].message.content}"`);

  // Refusals come back as the client's typed errors, naming the field.
  const refused = async (body, field, status) => {
    try {
      await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2, ...body });
    } catch (e) {
      check(e instanceof APIError && e.status === status, `${field}: HTTP ${status} (got ${e.status}: ${e.message})`);
      check(String(e.message).includes(field), `${field}: the error names it (${e.message})`);
      return;
    }
    check(false, `${field}: refused`);
  };
  await refused({ frobnicate: 1 }, 'frobnicate', 400);
  await refused({ tools: [{ type: 'function', function: { name: 'f', parameters: {} } }] }, 'tools', 400);
  await refused({ n: 99 }, 'n', 400);
  await refused({ top_logprobs: 2 }, 'top_logprobs', 400);
  await refused({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'string', pattern: '^a' } } } }, 'pattern', 400);

  // Structured output: the content parses and holds the schema's fields.
  const schema = { type: 'object', properties: { title: { type: 'string', maxLength: 12 }, pages: { type: 'integer' } }, required: ['title', 'pages'], additionalProperties: false };
  const structured = await client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'Describe the page as JSON.' }], max_tokens: 60, seed: 5,
    response_format: { type: 'json_schema', json_schema: { name: 'page', schema, strict: true } },
  });
  const content = structured.choices[0].message.content;
  let value = null;
  try { value = JSON.parse(content); } catch (e) { check(false, `json_schema content parses: ${content}`); }
  check(value && typeof value.title === 'string' && [...value.title].length <= 12 && Number.isInteger(value.pages) &&
        Object.keys(value).length === 2, `json_schema content holds the schema: ${content}`);
  check(structured.choices[0].finish_reason === 'stop', `json_schema: finish_reason stop (${structured.choices[0].finish_reason})`);

  // Two choices with log probabilities: what the client's types promise.
  const two = await client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'Say something' }], max_tokens: 4, seed: 9, n: 2, logprobs: true, top_logprobs: 2,
  });
  check(two.choices.length === 2 && two.choices[1].index === 1, 'n: 2 gives two choices');
  for (const c of two.choices) {
    const entries = c.logprobs.content;
    check(Array.isArray(entries) && entries.length >= 1, `logprobs.content is a list (${JSON.stringify(c.logprobs)})`);
    const joined = Buffer.from(entries.flatMap((t) => t.bytes)).toString('utf8');
    check(joined === c.message.content, `the logprob tokens' bytes are the answer: "${joined}" vs "${c.message.content}"`);
    check(entries.every((t) => t.logprob <= 0 && t.top_logprobs.length === 2), 'each entry: logprob <= 0 and 2 alternatives');
  }

  // Legacy text completions: the prompt as given.
  const legacy = await client.completions.create({ model, prompt: 'The total is', max_tokens: 4, temperature: 0 });
  check(legacy.object === 'text_completion' && typeof legacy.choices[0].text === 'string' && legacy.usage.completion_tokens >= 1,
        `completions: a text_completion (${JSON.stringify(legacy.choices[0])})`);

  // A wrong key: AuthenticationError (401).
  const wrong = new OpenAI({ baseURL, apiKey: apiKey + 'x', maxRetries: 0 });
  try {
    await wrong.models.list();
    check(false, 'a wrong key is refused');
  } catch (e) {
    check(e instanceof AuthenticationError && e.status === 401, `a wrong key: 401 (got ${e.status})`);
  }
  check(BadRequestError !== undefined, 'the client exports BadRequestError');
  console.log(`openai client test: models, image chat, streaming with usage, 5 refusals, n with logprobs, json_schema, text completions, a wrong key: all as OpenAI's client expects`);
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});

// Chat rendering: the Qwen3 hybrid style against the real Jinja template's output (fixture made with
// jinja2 by tests/fixtures/tokenizer/chat/make_qwen3_chat_fixture.py), the Qwen3-VL Instruct style
// against hand-checked strings, and the special-token ids of a rendered prompt.
#include <doctest/doctest.h>

#include <fstream>
#include <vector>

#include "runtime/error.h"
#include "runtime/json.h"
#include "runtime/tokenizer/chat_template.h"
#include "tests/unit/tokenizer_fixture.h"

using namespace ckjit::tok;

TEST_SUITE("tokenizer") {

TEST_CASE("Qwen3 hybrid chat rendering equals the Jinja template's") {
  std::ifstream f(std::string(CKJIT_FIXTURES_DIR) + "/tokenizer/chat/qwen3_hybrid.jsonl");
  REQUIRE(f);
  int n = 0;
  for (std::string line; std::getline(f, line); ++n) {
    const auto j = ckjit::parse_json(line);
    std::vector<ChatMessage> messages;
    for (const auto& m : j.at("messages").as_array()) {
      ChatMessage cm{m.at("role").as_string(), m.at("content").as_string(), std::nullopt};
      if (const auto r = m.find("reasoning_content")) cm.reasoning_content = r->as_string();
      messages.push_back(cm);
    }
    ChatOptions o;
    o.style = ChatStyle::Qwen3Hybrid;
    o.add_generation_prompt = j.at("add_generation_prompt").as_bool();
    if (!j.at("enable_thinking").is_null()) o.enable_thinking = j.at("enable_thinking").as_bool();
    CHECK_MESSAGE(render_chat(messages, o) == j.at("expected").as_string(), line);
  }
  CHECK(n >= 40);
}

TEST_CASE("Qwen3-VL Instruct chat rendering") {
  const std::string img = "<|vision_start|><|image_pad|><|vision_end|>";
  ChatOptions o;  // Qwen3VLInstruct, generation prompt
  CHECK(render_chat(std::vector<ChatMessage>{{"user", img + "Describe this image.", {}}}, o) ==
        "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>Describe this image.<|im_end|>\n"
        "<|im_start|>assistant\n");
  const std::vector<ChatMessage> chat = {{"system", "Be brief.", {}}, {"user", "Hi", {}},
                                         {"assistant", "<think>x</think>Hello", {}}, {"system", "dropped", {}},
                                         {"user", "Bye", {}}};
  CHECK(render_chat(chat, o) ==
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
        "<|im_start|>assistant\n<think>x</think>Hello<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n"
        "<|im_start|>assistant\n");
  o.add_generation_prompt = false;
  CHECK(render_chat(std::vector<ChatMessage>{{"user", "a", {}}, {"tool", "r", {}}}, o) ==
        "<|im_start|>user\na<|im_end|>\n<|im_start|>user\n<tool_response>\nr\n</tool_response><|im_end|>\n");
  CHECK_THROWS_AS(render_chat(std::vector<ChatMessage>{{"robot", "x", {}}}, o), ckjit::Error);
  CHECK_THROWS_AS(render_chat(std::vector<ChatMessage>{}, o), ckjit::Error);
}

TEST_CASE("chat style from the GGUF template text") {
  CHECK(chat_style_from_template("{{- '<|im_start|>' + message.role }} reasoning_content <think>") == ChatStyle::Qwen3Hybrid);
  CHECK(chat_style_from_template("{{- '<|im_start|>' + message.role }}") == ChatStyle::Qwen3VLInstruct);
  CHECK_THROWS_AS(chat_style_from_template("{{ bos_token }}[INST]"), ckjit::Error);
  CHECK_THROWS_AS(chat_style_from_template("<|im_start|>assistant\n<think>\n"), ckjit::Error);
}

TEST_CASE("a rendered prompt tokenizes to the spec's ids") {
  const Tokenizer& t = tokfix::qwen3();
  const std::string prompt = render_chat(std::vector<ChatMessage>{{"user", "<|vision_start|><|image_pad|><|vision_end|>Describe this image.", {}}}, {});
  const auto ids = t.encode(prompt, true, true);
  REQUIRE(ids.size() > 8);
  CHECK(ids[0] == 151644);                                // <|im_start|>
  CHECK(t.token_to_piece(ids[1]) == "user");              // one token (qwen3vl.md D.4 assumed so)
  CHECK(t.token_to_piece(ids[2]) == "\n");
  CHECK(ids[3] == 151652);                                // <|vision_start|>
  CHECK(ids[4] == 151655);                                // <|image_pad|>
  CHECK(ids[5] == 151653);                                // <|vision_end|>
  CHECK(ids[ids.size() - 3] == 151644);
  CHECK(t.token_to_piece(ids[ids.size() - 2]) == "assistant");
  CHECK(t.token_to_piece(ids.back()) == "\n");
}

}  // TEST_SUITE

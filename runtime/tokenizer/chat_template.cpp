#include "runtime/tokenizer/chat_template.h"

#include "runtime/error.h"

namespace ckjit::tok {
namespace {

constexpr std::string_view kThinkOpen = "<think>", kThinkClose = "</think>";

std::string_view strip_newlines_left(std::string_view s) {
  while (!s.empty() && s.front() == '\n') s.remove_prefix(1);
  return s;
}
std::string_view strip_newlines_right(std::string_view s) {
  while (!s.empty() && s.back() == '\n') s.remove_suffix(1);
  return s;
}

bool is_tool_response(std::string_view c) {
  return c.starts_with("<tool_response>") && c.ends_with("</tool_response>");
}

void check_role(const ChatMessage& m) {
  if (m.role != "system" && m.role != "user" && m.role != "assistant" && m.role != "tool")
    throw Error("chat: unknown role '" + m.role + "' (expected system, user, assistant or tool)");
}

// Qwen3 hybrid template, assistant turn: split "<think>reasoning</think>content" when no separate
// reasoning is given; show the reasoning only after the last user query.
void render_hybrid_assistant(std::string& out, const ChatMessage& m, bool after_last_query, bool is_last) {
  std::string_view content = m.content;
  std::string reasoning;
  if (m.reasoning_content) {
    reasoning = *m.reasoning_content;
  } else if (const size_t close = content.find(kThinkClose); close != std::string_view::npos) {
    const std::string_view before = content.substr(0, close);  // split('</think>')[0]
    std::string_view r = strip_newlines_right(before);
    if (const size_t open = r.rfind(kThinkOpen); open != std::string_view::npos) r = r.substr(open + kThinkOpen.size());
    reasoning = std::string(strip_newlines_left(r));
    content = strip_newlines_left(content.substr(content.rfind(kThinkClose) + kThinkClose.size()));  // split(...)[-1]
  }
  out += "<|im_start|>assistant\n";
  if (after_last_query && (is_last || !reasoning.empty())) {
    out += "<think>\n";
    out += strip_newlines_right(strip_newlines_left(reasoning));
    out += "\n</think>\n\n";
    out += strip_newlines_left(content);
  } else {
    out += content;
  }
  out += "<|im_end|>\n";
}

}  // namespace

std::string render_chat(std::span<const ChatMessage> messages, const ChatOptions& options) {
  if (messages.empty()) throw Error("chat: no messages");
  for (const ChatMessage& m : messages) check_role(m);
  const bool hybrid = options.style == ChatStyle::Qwen3Hybrid;

  // Index of the last real user query (tool results wrapped in <tool_response> do not count).
  size_t last_query = messages.size() - 1;
  for (size_t k = messages.size(); k-- > 0;)
    if (messages[k].role == "user" && !is_tool_response(messages[k].content)) {
      last_query = k;
      break;
    }

  std::string out;
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "system" && i > 0 && !hybrid) {
      continue;  // the Qwen3-VL template renders only a leading system message
    } else if (m.role == "system" || m.role == "user") {
      out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    } else if (m.role == "assistant") {
      if (hybrid) {
        render_hybrid_assistant(out, m, i > last_query, i + 1 == messages.size());
      } else {
        out += "<|im_start|>assistant\n" + m.content + "<|im_end|>\n";
      }
    } else {  // tool: consecutive results share one user turn
      if (i == 0 || messages[i - 1].role != "tool") out += "<|im_start|>user";
      out += "\n<tool_response>\n" + m.content + "\n</tool_response>";
      if (i + 1 == messages.size() || messages[i + 1].role != "tool") out += "<|im_end|>\n";
    }
  }
  if (options.add_generation_prompt) {
    out += "<|im_start|>assistant\n";
    if (hybrid && options.enable_thinking == false) out += "<think>\n\n</think>\n\n";
  }
  return out;
}

ChatStyle chat_style_from_template(std::string_view jinja) {
  if (jinja.find("<|im_start|>") == std::string_view::npos)
    throw Error("chat: the model's chat template is not a ChatML (<|im_start|>) template");
  if (jinja.find("reasoning_content") != std::string_view::npos) return ChatStyle::Qwen3Hybrid;
  if (jinja.find("<think>") != std::string_view::npos)
    throw Error("chat: thinking-model chat templates other than Qwen3's hybrid one are not supported");
  return ChatStyle::Qwen3VLInstruct;
}

}  // namespace ckjit::tok

// Renders a chat (system/user/assistant/tool turns, text only) the way the Qwen3 / Qwen3-VL Jinja
// chat templates do, without a Jinja engine. Images are the caller's business: put the marker text
// (e.g. "<|vision_start|><|image_pad|><|vision_end|>" or a media marker) inside the content.
// Tools/tool_calls are not rendered (only plain tool-result turns).
#pragma once
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace ckjit::tok {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant" or "tool"
  std::string content;
  std::optional<std::string> reasoning_content;  // assistant only (Qwen3 hybrid style)
};

enum class ChatStyle {
  // Qwen3-VL Instruct: "<|im_start|>{role}\n{content}<|im_end|>\n" per turn (a system message only
  // when it comes first), generation prompt "<|im_start|>assistant\n".
  Qwen3VLInstruct,
  // Qwen3 hybrid-thinking (the Qwen3 tokenizer_config.json template): the assistant turn after the
  // last user query carries a <think> block; enable_thinking = false adds an empty one to the prompt.
  Qwen3Hybrid,
};

struct ChatOptions {
  ChatStyle style = ChatStyle::Qwen3VLInstruct;
  bool add_generation_prompt = true;
  std::optional<bool> enable_thinking;  // Qwen3Hybrid: false -> "<think>\n\n</think>\n\n" after the prompt
};

// Throws ckjit::Error for an unknown role or an empty message list.
std::string render_chat(std::span<const ChatMessage> messages, const ChatOptions& options);

// Picks the style from a GGUF's tokenizer.chat_template text; throws ckjit::Error if the template is
// not a ChatML (<|im_start|>) template this renderer reproduces.
ChatStyle chat_style_from_template(std::string_view jinja);

}  // namespace ckjit::tok

#pragma once
// The serve tests' check of a refusal: the status, and an OpenAI error body (a non-empty message, a
// type, and the given code).
#include <doctest/doctest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>
#include <string>

inline void check_serve_error(const httplib::Result& r, int status, const std::string& code) {
  REQUIRE(r);
  INFO(r->body);
  CHECK(r->status == status);
  const nlohmann::json j = nlohmann::json::parse(r->body, nullptr, false);
  REQUIRE(j.is_object());
  REQUIRE(j.contains("error"));
  CHECK(j["error"]["message"].is_string());
  CHECK_FALSE(j["error"]["message"].get<std::string>().empty());
  CHECK(j["error"]["type"].is_string());
  CHECK(j["error"]["code"] == code);
}

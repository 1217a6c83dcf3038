#include "http/message.h"

#include <cctype>

namespace paddock::http {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  // ASCII only, as HTTP field names are (std::tolower asks the locale for every byte).
  auto fold = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  for (size_t i = 0; i < a.size(); ++i)
    if (fold(a[i]) != fold(b[i])) return false;
  return true;
}

std::string_view Request::GetHeader(std::string_view name) const {
  for (const auto& h : headers)
    if (EqualsIgnoreCase(h.name, name)) return h.value;
  return {};
}

bool Request::HasHeader(std::string_view name) const {
  for (const auto& h : headers)
    if (EqualsIgnoreCase(h.name, name)) return true;
  return false;
}

std::string_view Request::Path() const {
  std::string_view t = target;
  return t.substr(0, t.find('?'));
}

std::string_view Request::Query() const {
  std::string_view t = target;
  size_t q = t.find('?');
  return q == std::string_view::npos ? std::string_view() : t.substr(q + 1);
}

void Response::SetHeader(std::string name, std::string value) {
  for (auto& h : headers) {
    if (EqualsIgnoreCase(h.name, name)) {
      h.value = std::move(value);
      return;
    }
  }
  headers.push_back({std::move(name), std::move(value)});
}

std::string_view Response::GetHeader(std::string_view name) const {
  for (const auto& h : headers)
    if (EqualsIgnoreCase(h.name, name)) return h.value;
  return {};
}

}  // namespace paddock::http

#include "message/header_edit.h"

#include <algorithm>

namespace tlsfront::http {
namespace {

std::string lowercase(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
  return out;
}

}  // namespace

void FieldTemplate::append_value(std::string& out, const HeaderVars& vars) const {
  for (const auto& s : segments) {
    if (s.is_var) {
      out.append(vars[static_cast<size_t>(s.var)]);
    } else {
      out.append(s.literal);
    }
  }
}

bool HeaderEdit::erases(std::string_view name) const {
  for (const auto& e : erase) {
    if (e.size() == name.size() && iequals(e, name)) return true;
  }
  return false;
}

void compile_edit(HeaderEdit& edit, const std::vector<EditRule>& rules) {
  for (const auto& rule : rules) {
    if (rule.kind != EditRule::Kind::Add) {
      std::string name = lowercase(rule.field.name);
      std::erase_if(edit.append, [&name](const FieldTemplate& f) { return iequals(f.name, name); });
      if (std::find(edit.erase.begin(), edit.erase.end(), name) == edit.erase.end()) edit.erase.push_back(name);
    }
    if (rule.kind != EditRule::Kind::Remove) edit.append.push_back(rule.field);
  }
}

void apply_edit(std::vector<Header>& headers, const HeaderEdit& edit, const HeaderVars& vars) {
  if (!edit.erase.empty()) {
    std::erase_if(headers, [&edit](const Header& h) { return edit.erases(h.name); });
  }
  for (const auto& f : edit.append) {
    Header& h = headers.emplace_back();
    h.name = f.name;
    h.no_index = !f.constant;
    f.append_value(h.value, vars);
  }
}

}  // namespace tlsfront::http

#include "message/header_edit.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

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
  // One pass, linear in the fields: an appended field removed by a later
  // rule is marked dead (found through `live`, the live ones by lowercase
  // name) rather than erased from the vector, and names go into `erase`
  // once (`erased`); a table of 100k rules compiles in milliseconds.
  struct Slot {
    FieldTemplate field;
    bool dead = false;
  };
  std::vector<Slot> slots;
  slots.reserve(edit.append.size() + rules.size());
  std::unordered_map<std::string, std::vector<size_t>> live;
  auto append = [&](const FieldTemplate& f) {
    live[lowercase(f.name)].push_back(slots.size());
    slots.push_back(Slot{f});
  };
  for (const auto& f : edit.append) append(f);
  std::unordered_set<std::string> erased(edit.erase.begin(), edit.erase.end());
  for (const auto& rule : rules) {
    if (rule.kind != EditRule::Kind::Add) {
      std::string name = lowercase(rule.field.name);
      if (auto it = live.find(name); it != live.end()) {
        for (size_t i : it->second) slots[i].dead = true;
        it->second.clear();
      }
      if (erased.insert(name).second) edit.erase.push_back(std::move(name));
    }
    if (rule.kind != EditRule::Kind::Remove) append(rule.field);
  }
  edit.append.clear();
  for (auto& s : slots) {
    if (!s.dead) edit.append.push_back(std::move(s.field));
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

#include "tools/nginx_conf.h"

#include <glob.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tlsfront::tools::nginx {
namespace {

namespace fs = std::filesystem;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

struct Token {
  enum Kind { Word, Semicolon, Open, Close, End } kind = End;
  std::string text;
  int line = 0, column = 0;
};

class Lexer {
 public:
  Lexer(const std::string& text, const std::string& file) : s_(text), file_(file) {}

  Result<Token> next() {
    // Skip whitespace and comments.
    while (pos_ < s_.size()) {
      if (is_space(s_[pos_])) {
        advance();
      } else if (s_[pos_] == '#') {
        while (pos_ < s_.size() && s_[pos_] != '\n') advance();
      } else {
        break;
      }
    }
    Token t;
    t.line = line_;
    t.column = column_;
    if (pos_ >= s_.size()) return t;
    char c = s_[pos_];
    if (c == ';' || c == '{' || c == '}') {
      advance();
      t.kind = c == ';' ? Token::Semicolon : c == '{' ? Token::Open : Token::Close;
      return t;
    }
    t.kind = Token::Word;
    if (c == '"' || c == '\'') {
      advance();
      while (true) {
        if (pos_ >= s_.size()) return error(t.line, t.column, "unexpected end of file in a quoted string");
        char d = s_[pos_];
        if (d == c) {
          advance();
          break;
        }
        if (d == '\\' && pos_ + 1 < s_.size()) {
          escape(t.text);
          continue;
        }
        t.text += d;
        advance();
      }
      if (pos_ < s_.size() && !is_space(s_[pos_]) && s_[pos_] != ';' && s_[pos_] != '{' && s_[pos_] != '}') {
        return error(line_, column_, std::string("unexpected \"") + s_[pos_] + "\" after a quoted string");
      }
      return t;
    }
    bool variable = false;
    while (pos_ < s_.size()) {
      char d = s_[pos_];
      if (d == '{' && variable) {
        t.text += d;
        advance();
        variable = false;
        continue;
      }
      variable = false;
      if (is_space(d) || d == ';' || d == '{') break;
      if (d == '\\' && pos_ + 1 < s_.size()) {  // the next byte ends nothing
        escape(t.text);
        continue;
      }
      if (d == '$') variable = true;
      t.text += d;
      advance();
    }
    return t;
  }

  // A backslash and the byte after it, as nginx unescapes every word, quoted
  // or not: \" \' \\ \t \r \n, any other pair kept as it is.
  void escape(std::string& out) {
    char e = s_[pos_ + 1];
    advance();
    advance();
    switch (e) {
      case '"': out += '"'; break;
      case '\'': out += '\''; break;
      case '\\': out += '\\'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case 'n': out += '\n'; break;
      default: out += '\\'; out += e;
    }
  }

  Error error(int line, int column, const std::string& message) const {
    return make_error(Errc::InvalidArgument, file_ + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + message);
  }

 private:
  void advance() {
    if (s_[pos_] == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
    ++pos_;
  }

  const std::string& s_;
  const std::string& file_;
  size_t pos_ = 0;
  int line_ = 1, column_ = 1;
};

struct Reader {
  std::string base_dir;
  std::vector<std::string> stack;  // canonical paths of the files being read (cycle detection)
  size_t files = 0;

  Status read_file(const std::string& path, const std::string& canonical, std::vector<Directive>& out, const Directive* from);
  Status parse(const std::string& text, const std::string& file, std::vector<Directive>& out);
  Status include(const Directive& d, std::vector<Directive>& out);
};

std::string place(const Directive& d) { return d.file + ":" + std::to_string(d.line) + ":" + std::to_string(d.column); }

Status Reader::read_file(const std::string& path, const std::string& canonical, std::vector<Directive>& out,
                         const Directive* from) {
  std::string prefix = from ? place(*from) + ": include: " : "";
  if (++files > kMaxFiles) return make_error(Errc::InvalidArgument, prefix + "more than " + std::to_string(kMaxFiles) + " files");
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return make_error(Errc::Io, prefix + "cannot open \"" + path + "\": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return make_error(Errc::Io, prefix + "\"" + path + "\" is not a regular file");
  if (static_cast<size_t>(st.st_size) > kMaxFileBytes) {
    return make_error(Errc::InvalidArgument, prefix + "\"" + path + "\" is larger than " + std::to_string(kMaxFileBytes) + " bytes");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(Errc::Io, prefix + "cannot open \"" + path + "\": " + std::strerror(errno));
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) return make_error(Errc::Io, prefix + "cannot read \"" + path + "\"");
  stack.push_back(canonical);
  Status s = parse(buf.str(), path, out);
  stack.pop_back();
  return s;
}

Status Reader::include(const Directive& d, std::vector<Directive>& out) {
  if (d.args.size() != 1) return make_error(Errc::InvalidArgument, place(d) + ": include: takes exactly one file or pattern");
  if (static_cast<int>(stack.size()) > kMaxIncludeDepth) {
    return make_error(Errc::InvalidArgument, place(d) + ": include: nested more than " + std::to_string(kMaxIncludeDepth) + " deep");
  }
  const std::string& pattern = d.args[0];
  std::string full = pattern.empty() || pattern[0] == '/' ? pattern : (fs::path(base_dir) / pattern).string();
  std::vector<std::string> paths;
  if (full.find_first_of("*?[") == std::string::npos) {
    paths.push_back(full);
  } else {
    glob_t g{};
    int rc = ::glob(full.c_str(), 0, nullptr, &g);
    if (rc == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) paths.emplace_back(g.gl_pathv[i]);
    }
    globfree(&g);
    if (rc != 0 && rc != GLOB_NOMATCH) return make_error(Errc::Io, place(d) + ": include: cannot read \"" + full + "\"");
  }
  for (const std::string& p : paths) {
    std::error_code ec;
    std::string canonical = fs::weakly_canonical(p, ec).string();
    if (ec) canonical = p;
    for (const std::string& open : stack) {
      if (open == canonical) {
        return make_error(Errc::InvalidArgument, place(d) + ": include: \"" + p + "\" includes itself (an include cycle)");
      }
    }
    if (Status s = read_file(p, canonical, out, &d); !s.ok()) return s;
  }
  return {};
}

Status Reader::parse(const std::string& text, const std::string& file, std::vector<Directive>& out) {
  Lexer lex(text, file);
  // The blocks being filled: [0] is `out`; each open block pushes its children.
  std::vector<std::vector<Directive>*> open{&out};
  Directive current;
  bool in_directive = false;
  while (true) {
    Result<Token> r = lex.next();
    if (!r.ok()) return r.take_error();
    Token& t = *r;
    switch (t.kind) {
      case Token::Word:
        if (!in_directive) {
          current = Directive{};
          current.name = std::move(t.text);
          current.file = file;
          current.line = t.line;
          current.column = t.column;
          in_directive = true;
        } else {
          current.args.push_back(std::move(t.text));
        }
        break;
      case Token::Semicolon:
        if (!in_directive) return lex.error(t.line, t.column, "unexpected \";\"");
        in_directive = false;
        if (current.name == "include") {
          if (Status s = include(current, *open.back()); !s.ok()) return s;
        } else {
          open.back()->push_back(std::move(current));
        }
        break;
      case Token::Open:
        if (!in_directive) return lex.error(t.line, t.column, "unexpected \"{\"");
        in_directive = false;
        if (current.name == "include") return lex.error(current.line, current.column, "include: takes no block");
        if (open.size() > 64) return lex.error(t.line, t.column, "blocks nested more than 64 deep");
        current.block = true;
        open.back()->push_back(std::move(current));
        open.push_back(&open.back()->back().children);
        break;
      case Token::Close:
        if (in_directive) {
          return lex.error(t.line, t.column, "unexpected \"}\": directive \"" + current.name + "\" is not terminated by \";\"");
        }
        if (open.size() == 1) return lex.error(t.line, t.column, "unexpected \"}\"");
        open.pop_back();
        break;
      case Token::End:
        if (in_directive) {
          return lex.error(t.line, t.column, "unexpected end of file: directive \"" + current.name + "\" is not terminated by \";\"");
        }
        if (open.size() > 1) return lex.error(t.line, t.column, "unexpected end of file, expecting \"}\"");
        return {};
    }
  }
}

}  // namespace

Result<std::vector<Directive>> parse_string(const std::string& text, const std::string& file, const std::string& base_dir) {
  Reader reader{base_dir, {}, 1};
  std::error_code ec;
  std::string canonical = fs::weakly_canonical(file, ec).string();
  reader.stack.push_back(ec ? file : canonical);
  std::vector<Directive> out;
  if (Status s = reader.parse(text, file, out); !s.ok()) return s.take_error();
  return out;
}

Result<std::vector<Directive>> parse_file(const std::string& path) {
  fs::path dir = fs::path(path).parent_path();
  Reader reader{dir.empty() ? "." : dir.string(), {}, 0};
  std::error_code ec;
  std::string canonical = fs::weakly_canonical(path, ec).string();
  std::vector<Directive> out;
  if (Status s = reader.read_file(path, ec ? path : canonical, out, nullptr); !s.ok()) return s.take_error();
  return out;
}

}  // namespace tlsfront::tools::nginx

#include "message/error_response.h"

namespace tlsfront::http {

std::string_view reason_phrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 101: return "Switching Protocols";
    case 103: return "Early Hints";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 206: return "Partial Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 303: return "See Other";
    case 304: return "Not Modified";
    case 307: return "Temporary Redirect";
    case 308: return "Permanent Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 417: return "Expectation Failed";
    case 421: return "Misdirected Request";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

std::string make_error_body(int status) {
  std::string body = std::to_string(status);
  body += ' ';
  body += reason_phrase(status);
  body += '\n';
  return body;
}

void append_error_headers(std::vector<Header>& out) {
  out.push_back(Header{"Server", "tlsfront", HeaderToken::Other});
  out.push_back(Header{"Content-Type", "text/plain", HeaderToken::Other});
}

std::string make_error_response(int status, bool close, bool head_only, const HeaderEdit* edit,
                                const HeaderVars* vars) {
  std::string body = make_error_body(status);
  std::string out = "HTTP/1.1 ";
  out += std::to_string(status);
  out += ' ';
  out += reason_phrase(status);
  out += "\r\n";
  if (edit == nullptr) {
    out += "Server: tlsfront\r\nContent-Type: text/plain\r\n";
  } else {
    if (!edit->erases("server")) out += "Server: tlsfront\r\n";
    if (!edit->erases("content-type")) out += "Content-Type: text/plain\r\n";
    for (const auto& f : edit->append) {
      out += f.name;
      out += ": ";
      f.append_value(out, *vars);
      out += "\r\n";
    }
  }
  out += "Content-Length: ";
  out += std::to_string(body.size());
  out += close ? "\r\nConnection: close\r\n\r\n" : "\r\n\r\n";
  if (!head_only) out += body;
  return out;
}

}  // namespace tlsfront::http

// `tlsfront import-nginx [-o FILE] NGINX.CONF`: an nginx configuration
// (tools/nginx_conf.h: includes resolved) turned into a tlsfront TOML file
// (tools/nginx_import.h: what maps to what). The TOML goes to standard
// output (or FILE); the report of what was not carried over to standard
// error, one line each, "file:line: directive: why", then a summary line.
// The TOML is checked against tlsfront's schema (config::load_string)
// before it is written; files it names are not opened (tlsfront --test does).
// Exit status: 0 when a configuration was written; 1 on a syntax error (its
// "file:line:column: message"), an unreadable file, or when nothing usable
// was found (the report says what was); 2 for a usage error.
// Thread affinity: the main thread (a command, not part of the server).
#pragma once

namespace tlsfront::tools {

// `argv[0]` is "import-nginx".
int import_nginx_main(int argc, char** argv);

}  // namespace tlsfront::tools

# Install rules (`cmake --install build`, and scripts/package.sh's Debian
# package, which installs with --prefix /usr): the binary, the systemd units,
# logrotate, the configuration, the man page, the Prometheus rules and the
# Grafana dashboard. For --prefix /usr the configuration goes to /etc and the
# logs to /var (GNUInstallDirs' special case); the units name the installed
# binary and the man page.
include(GNUInstallDirs)

pkg_get_variable(TLSFRONT_SYSTEMD_PC_UNITDIR systemd systemdsystemunitdir)
if(NOT TLSFRONT_SYSTEMD_PC_UNITDIR)
  set(TLSFRONT_SYSTEMD_PC_UNITDIR /lib/systemd/system)
endif()
set(TLSFRONT_SYSTEMD_UNITDIR ${TLSFRONT_SYSTEMD_PC_UNITDIR} CACHE PATH "Where the systemd units are installed")

set(TLSFRONT_CONF_DIR ${CMAKE_INSTALL_FULL_SYSCONFDIR}/tlsfront)
set(TLSFRONT_LOG_DIR ${CMAKE_INSTALL_FULL_LOCALSTATEDIR}/log/tlsfront)
set(TLSFRONT_INSTALLED_BINARY ${CMAKE_INSTALL_FULL_SBINDIR}/tlsfront)
set(gen ${CMAKE_BINARY_DIR}/install)

# text = `text` with each FROM replaced by TO; a FROM that is not there is
# recorded in `missing` (the install then fails: the source changed under
# the rule).
function(tlsfront_substitute text_var missing_var)
  set(text "${${text_var}}")
  set(missing "${${missing_var}}")
  list(LENGTH ARGN n)
  math(EXPR last "${n} - 1")
  foreach(i RANGE 0 ${last} 2)
    math(EXPR j "${i} + 1")
    list(GET ARGN ${i} from)
    list(GET ARGN ${j} to)
    string(FIND "${text}" "${from}" at)
    if(at EQUAL -1)
      list(APPEND missing "${from}")
    endif()
    string(REPLACE "${from}" "${to}" text "${text}")
  endforeach()
  set(${text_var} "${text}" PARENT_SCOPE)
  set(${missing_var} "${missing}" PARENT_SCOPE)
endfunction()

set(missing "")
foreach(unit tlsfront.service tlsfront.socket)
  file(READ ${CMAKE_SOURCE_DIR}/systemd/${unit} text)
  if(unit STREQUAL "tlsfront.service")
    tlsfront_substitute(text missing
      "/usr/local/bin/tlsfront" "${TLSFRONT_INSTALLED_BINARY}"
      "Documentation=file:///usr/local/share/doc/tlsfront/README.md" "Documentation=man:tlsfront(8)")
  endif()
  file(WRITE ${gen}/${unit} "${text}")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/systemd/${unit})
endforeach()

# The installed configuration: conf/tlsfront.toml with installed paths. The
# certificate is a self-signed placeholder (the Debian package's postinst
# makes it; replace it with yours), the listener the socket unit's address.
file(READ ${CMAKE_SOURCE_DIR}/conf/tlsfront.toml text)
tlsfront_substitute(text missing
  "# tlsfront example configuration (used by scripts/run.sh for the dev setup)."
  "# tlsfront configuration, ${TLSFRONT_CONF_DIR}/tlsfront.toml (tlsfront(8)).\n# Check a change with `tlsfront --config ${TLSFRONT_CONF_DIR}/tlsfront.toml --test`,\n# apply it with `systemctl reload tlsfront`."
  "address = \"127.0.0.1:8443\"" "address = \"0.0.0.0:443\""
  "# (scripts/run.sh generates the dev PKI into build/dev-pki.)"
  "# The Debian package's postinst generated a self-signed placeholder for this\n# host's name (selfsigned.pem, selfsigned.key): replace both with yours."
  "certificate = \"../build/dev-pki/localhost.chain.pem\"" "certificate = \"${TLSFRONT_CONF_DIR}/selfsigned.pem\""
  "key = \"../build/dev-pki/localhost.key\"" "key = \"${TLSFRONT_CONF_DIR}/selfsigned.key\""
  "# The dev PKI's root is not in the system store, hence this line:"
  "# The self-signed placeholder is its own root. Remove this line with a\n# certificate from a public CA:"
  "trusted_ca = \"../build/dev-pki/root.pem\"" "trusted_ca = \"${TLSFRONT_CONF_DIR}/selfsigned.pem\""
  "access_log = \"../build/logs/access.log\"" "access_log = \"${TLSFRONT_LOG_DIR}/access.log\"")
file(WRITE ${gen}/tlsfront.toml "${text}")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/conf/tlsfront.toml)

if(missing)
  string(REPLACE ";" "\n  " missing_text "${missing}")
  message(WARNING "packaging/install.cmake: these lines are gone from their sources; update its substitutions:\n  ${missing_text}")
  install(CODE "message(FATAL_ERROR \"packaging/install.cmake: stale substitutions (see the configure warning)\")")
endif()

install(TARGETS tlsfront RUNTIME DESTINATION ${CMAKE_INSTALL_SBINDIR})
install(FILES ${gen}/tlsfront.service ${gen}/tlsfront.socket DESTINATION ${TLSFRONT_SYSTEMD_UNITDIR})
install(FILES ${CMAKE_SOURCE_DIR}/systemd/tlsfront.logrotate DESTINATION ${CMAKE_INSTALL_FULL_SYSCONFDIR}/logrotate.d
        RENAME tlsfront)
install(FILES ${gen}/tlsfront.toml DESTINATION ${TLSFRONT_CONF_DIR})
install(FILES ${CMAKE_SOURCE_DIR}/conf/prometheus/tlsfront.rules.yml DESTINATION ${CMAKE_INSTALL_DATADIR}/tlsfront/prometheus)
install(FILES ${CMAKE_SOURCE_DIR}/conf/grafana/tlsfront.json DESTINATION ${CMAKE_INSTALL_DATADIR}/tlsfront/grafana)

# The man pages, made by pandoc (scripts/install-deps.sh) with man/man.lua
# (tables as definition lists, links as their text): tlsfront(8) from
# man/tlsfront.8.md; tlsfront.toml(5) from man/tlsfront.toml.5.md (NAME,
# SYNOPSIS) followed by the configuration reference, docs/configuration.md,
# when the tree has it.
find_program(PANDOC pandoc)
set(TLSFRONT_MAN_PAGES "")
if(PANDOC)
  function(tlsfront_man_page page section)
    set(out ${CMAKE_BINARY_DIR}/man/${page}.${section})
    add_custom_command(
      OUTPUT ${out}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/man
      COMMAND ${PANDOC} --standalone --from markdown --to man --lua-filter ${CMAKE_SOURCE_DIR}/man/man.lua
              --metadata "footer=tlsfront ${PROJECT_VERSION}" -o ${out} ${ARGN}
      DEPENDS ${ARGN} ${CMAKE_SOURCE_DIR}/man/man.lua
      COMMENT "Generating ${page}(${section}) with pandoc")
    install(FILES ${out} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section})
    set(TLSFRONT_MAN_PAGES ${TLSFRONT_MAN_PAGES} ${out} PARENT_SCOPE)
  endfunction()
  tlsfront_man_page(tlsfront 8 ${CMAKE_SOURCE_DIR}/man/tlsfront.8.md)
  if(EXISTS ${CMAKE_SOURCE_DIR}/docs/configuration.md)
    tlsfront_man_page(tlsfront.toml 5 ${CMAKE_SOURCE_DIR}/man/tlsfront.toml.5.md ${CMAKE_SOURCE_DIR}/docs/configuration.md)
  else()
    message(STATUS "docs/configuration.md not found: no tlsfront.toml(5)")
  endif()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/docs)
  add_custom_target(man ALL DEPENDS ${TLSFRONT_MAN_PAGES})
else()
  message(WARNING "pandoc not found: no man pages (scripts/install-deps.sh installs it)")
endif()

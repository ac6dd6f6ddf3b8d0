/*
 * btl/iwarpx source address: which local IPv4 address the RDM endpoint binds to, from
 * btl_iwarpx_if_include, and whether a peer's published address is the wildcard.
 *
 * Why: without a source address the provider binds the wildcard (0.0.0.0, port chosen by the
 * kernel) and fi_getname names the endpoint 0.0.0.0:port. That reaches processes on this host
 * only; a peer on another host would send to its own host and wait forever. So
 *  - btl_iwarpx_if_include (comma list of interface names and/or IPv4 CIDR subnets) picks the
 *    first address of an interface that is up and matches, and the endpoint binds to it
 *    (port 0); no match is a verbose-1 line and no module;
 *  - a peer on another node that published the wildcard address is unreachable, with a
 *    verbose-1 line naming the parameter, instead of a hang.
 */
// clang-format off
#include "opal_config.h" /* first, see btl_iwarpx.h */
// clang-format on

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "btl_iwarpx.h"
#include "opal/util/output.h"

/* Does token (an interface name, or a.b.c.d/n) select interface `name` with address `a`?
 * -1 when the token is a malformed subnet. */
static int token_matches(const char* token, const char* name, const struct in_addr* a) {
  const char* slash = strchr(token, '/');
  if (slash == NULL) return strcmp(token, name) == 0;
  char net[INET_ADDRSTRLEN];
  const size_t len = (size_t)(slash - token);
  if (len == 0 || len >= sizeof(net)) return -1;
  memcpy(net, token, len);
  net[len] = '\0';
  char* end = NULL;
  const long bits = strtol(slash + 1, &end, 10);
  struct in_addr n;
  if (*end != '\0' || end == slash + 1 || bits < 0 || bits > 32 || inet_pton(AF_INET, net, &n) != 1)
    return -1;
  const uint32_t mask = bits == 0 ? 0 : htonl(~(uint32_t)0 << (32 - bits));
  return (a->s_addr & mask) == (n.s_addr & mask);
}

int mca_btl_iwarpx_pick_source(const char* if_include, struct sockaddr_in* out) {
  mca_btl_iwarpx_component_t* c = &mca_btl_iwarpx_component;
  struct ifaddrs* ifs = NULL;
  if (getifaddrs(&ifs) != 0) {
    opal_output_verbose(1, c->output, "btl:iwarpx: getifaddrs failed: cannot apply if_include");
    return OPAL_ERROR;
  }
  char* list = strdup(if_include);
  int rc = OPAL_ERR_NOT_FOUND;
  for (char *save = NULL, *tok = strtok_r(list, ",", &save); list != NULL && tok != NULL;
       tok = strtok_r(NULL, ",", &save)) {
    for (const struct ifaddrs* i = ifs; i != NULL; i = i->ifa_next) {
      if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET || (i->ifa_flags & IFF_UP) == 0)
        continue;
      const struct sockaddr_in* sin = (const struct sockaddr_in*)(const void*)i->ifa_addr;
      const int m = token_matches(tok, i->ifa_name, &sin->sin_addr);
      if (m < 0) {
        opal_output_verbose(1, c->output,
                            "btl:iwarpx: btl_iwarpx_if_include entry '%s' is not an interface "
                            "name or an IPv4 a.b.c.d/n subnet",
                            tok);
        rc = OPAL_ERR_BAD_PARAM;
        goto done;
      }
      if (m == 1) {
        memset(out, 0, sizeof(*out));
        out->sin_family = AF_INET;
        out->sin_addr = sin->sin_addr;
        char text[INET_ADDRSTRLEN] = "?";
        (void)inet_ntop(AF_INET, &sin->sin_addr, text, sizeof(text));
        opal_output_verbose(1, c->output, "btl:iwarpx: binding to %s (%s, if_include '%s')", text,
                            i->ifa_name, if_include);
        rc = OPAL_SUCCESS;
        goto done;
      }
    }
  }
  opal_output_verbose(1, c->output,
                      "btl:iwarpx: no interface that is up matches btl_iwarpx_if_include '%s'",
                      if_include);
done:
  free(list);
  freeifaddrs(ifs);
  return rc;
}

bool mca_btl_iwarpx_addr_is_wildcard(const void* addr, size_t len) {
  if (len >= sizeof(struct sockaddr_in) && ((const struct sockaddr*)addr)->sa_family == AF_INET) {
    const struct sockaddr_in* sin = addr;
    return sin->sin_addr.s_addr == htonl(INADDR_ANY);
  }
  if (len >= sizeof(struct sockaddr_in6) && ((const struct sockaddr*)addr)->sa_family == AF_INET6) {
    const struct sockaddr_in6* sin6 = addr;
    return IN6_IS_ADDR_UNSPECIFIED(&sin6->sin6_addr);
  }
  return false;
}

// Error checks, fi_info summary and memory regions shared by the benchmark
// endpoints. See bench_ofi.h for the contract.
#include "bench_ofi.h"

#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>

#include <cstring>
#include <string>

#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>

namespace bench {
namespace {

constexpr size_t kPageSize = 4096;

}  // namespace

void Check(const Options& o, ssize_t ret, const char* call) {
  if (ret >= 0) return;
  Fail(o, std::string(call) + " failed: " + fi_strerror(static_cast<int>(-ret)) + " (" +
              std::to_string(ret) + ")");
}

void CheckMrMode(const Options& o, const fi_info* info) {
  const uint64_t mr_mode = static_cast<uint64_t>(info->domain_attr->mr_mode);
  if ((mr_mode & ~kMrModesHandled) == 0) return;
  uint64_t extra = mr_mode & ~kMrModesHandled;
  Fail(o, std::string("provider requires unsupported mr_mode bits ") +
              fi_tostr(&extra, FI_TYPE_MR_MODE));
}

EndpointParts OpenEndpointWithCqs(const Options& o, fid_domain* domain, fi_info* info,
                                  fi_cq_format cq_format, fid* first, const char* first_name) {
  EndpointParts p;
  fi_cq_attr cq_attr{};
  cq_attr.format = cq_format;
  cq_attr.wait_obj = FI_WAIT_NONE;
  cq_attr.size = info->tx_attr->size;
  Check(o, fi_cq_open(domain, &cq_attr, &p.tx_cq, nullptr), "fi_cq_open (transmit)");
  cq_attr.size = info->rx_attr->size;
  Check(o, fi_cq_open(domain, &cq_attr, &p.rx_cq, nullptr), "fi_cq_open (receive)");
  Check(o, fi_endpoint(domain, info, &p.ep, nullptr), "fi_endpoint");
  Check(o, fi_ep_bind(p.ep, first, 0), first_name);
  Check(o, fi_ep_bind(p.ep, &p.tx_cq->fid, FI_TRANSMIT), "fi_ep_bind (transmit cq)");
  Check(o, fi_ep_bind(p.ep, &p.rx_cq->fid, FI_RECV), "fi_ep_bind (receive cq)");
  Check(o, fi_enable(p.ep), "fi_enable");
  return p;
}

void CqFail(const Options& o, fid_cq* cq, const char* which) {
  fi_cq_err_entry err{};
  const ssize_t ret = fi_cq_readerr(cq, &err, 0);
  if (ret < 0) Check(o, ret, "fi_cq_readerr");
  Fail(o, std::string(which) + " completion error: " + fi_strerror(err.err) +
              " (provider: " + fi_cq_strerror(cq, err.prov_errno, err.err_data, nullptr, 0) + ")");
}

void Close(fid* f, const char* what) {
  if (f == nullptr) return;
  const int ret = fi_close(f);
  if (ret != 0) fprintf(stderr, "warning: fi_close(%s) failed: %s\n", what, fi_strerror(-ret));
}

unsigned BoundPort(const Options& o, fid* f) {
  sockaddr_storage bound{};
  size_t bound_len = sizeof(bound);
  Check(o, fi_getname(f, &bound, &bound_len), "fi_getname");
  if (bound.ss_family == AF_INET) {
    return ntohs(reinterpret_cast<const sockaddr_in*>(&bound)->sin_port);
  }
  if (bound.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&bound)->sin6_port);
  }
  Fail(o, "fi_getname returned an address that is neither IPv4 nor IPv6");
}

void PrintInfo(const fi_info* info) {
  // fi_tostr returns a static buffer: copy each result before the next call.
  uint64_t mr_mode = static_cast<uint64_t>(info->domain_attr->mr_mode);
  const std::string mr = fi_tostr(&mr_mode, FI_TYPE_MR_MODE);
  const std::string progress = fi_tostr(&info->domain_attr->data_progress, FI_TYPE_PROGRESS);
  const std::string av = fi_tostr(&info->domain_attr->av_type, FI_TYPE_AV_TYPE);
  fprintf(stderr,
          "# fi_info: provider %s, fabric %s, domain %s, mr_mode [%s], data_progress %s, "
          "av_type %s, tx size %zu, rx size %zu, inject %zu, max_msg_size %zu\n",
          info->fabric_attr->prov_name, info->fabric_attr->name, info->domain_attr->name,
          mr.c_str(), progress.c_str(), av.c_str(), info->tx_attr->size, info->rx_attr->size,
          info->tx_attr->inject_size, info->ep_attr->max_msg_size);
}

std::unique_ptr<Region> RegisterRegion(const Options& o, const fi_info* info, fid_domain* domain,
                                       fid_ep* ep, size_t len, uint64_t access,
                                       uint64_t requested_key) {
  auto r = std::make_unique<Region>();
  r->len = len;
  const size_t rounded = (len + kPageSize - 1) / kPageSize * kPageSize;
  r->buf = static_cast<uint8_t*>(aligned_alloc(kPageSize, rounded));
  if (r->buf == nullptr) Fail(o, "out of memory for a " + std::to_string(len) + " B buffer");
  memset(r->buf, 0, rounded);
  const uint64_t mr_mode = static_cast<uint64_t>(info->domain_attr->mr_mode);
  const bool remote = (access & (FI_REMOTE_READ | FI_REMOTE_WRITE)) != 0;
  if ((mr_mode & FI_MR_LOCAL) == 0 && !remote) return r;
  Check(o, fi_mr_reg(domain, r->buf, len, access, 0, requested_key, 0, &r->mr, nullptr),
        "fi_mr_reg");
  if ((mr_mode & FI_MR_ENDPOINT) != 0) {
    Check(o, fi_mr_bind(r->mr, &ep->fid, 0), "fi_mr_bind (endpoint)");
    Check(o, fi_mr_enable(r->mr), "fi_mr_enable");
  }
  if ((mr_mode & FI_MR_LOCAL) != 0) r->desc = fi_mr_desc(r->mr);
  r->key = fi_mr_key(r->mr);
  if (r->key == FI_KEY_NOTAVAIL) Fail(o, "fi_mr_key: key not available (FI_MR_RAW unsupported)");
  r->remote_addr = (mr_mode & FI_MR_VIRT_ADDR) != 0 ? reinterpret_cast<uint64_t>(r->buf) : 0;
  return r;
}

void FreeRegion(Region* r) {
  if (r == nullptr) return;
  Close(r->mr == nullptr ? nullptr : &r->mr->fid, "mr");
  r->mr = nullptr;
  free(r->buf);
  r->buf = nullptr;
}

}  // namespace bench

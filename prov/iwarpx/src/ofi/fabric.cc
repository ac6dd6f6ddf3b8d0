#include "ofi/fabric.h"

#include <cstring>
#include <new>

#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "ofi/cntr.h"
#include "ofi/cq.h"
#include "ofi/domain.h"
#include "ofi/eq.h"
#include "ofi/log.h"
#include "ofi/pep.h"
#include "ofi/prov.h"

namespace iwarpx::ofi {
namespace {

int FabricClose(struct fid* fid) {
  return OwnerOf<Fabric>(reinterpret_cast<struct fid_fabric*>(fid))->Close();
}

int WaitOpen(struct fid_fabric* /*fabric*/, struct fi_wait_attr* /*attr*/,
             struct fid_wait** /*waitset*/) {
  IWX_WARN(fabric, "fi_wait_open: wait sets are not supported; use FI_WAIT_FD and FI_GETWAIT\n");
  return -FI_ENOSYS;
}

int TryWaitOp(struct fid_fabric* /*fabric*/, struct fid** fids, int count) {
  return Fabric::TryWait(fids, count);
}

int Domain2(struct fid_fabric* /*fabric*/, struct fi_info* /*info*/, struct fid_domain** /*dom*/,
            uint64_t flags, void* /*context*/) {
  IWX_WARN(domain, "fi_domain2: flags %#lx are not supported (FI_PEER domains)\n",
           static_cast<unsigned long>(flags));
  return -FI_ENOSYS;
}

const struct fi_ops kFabricFiOps = {
    .size = sizeof(struct fi_ops),
    .close = FabricClose,
    .bind = fi_no_bind,
    .control = fi_no_control,
    .ops_open = fi_no_ops_open,
    .tostr = fi_no_tostr,
    .ops_set = fi_no_ops_set,
};

const struct fi_ops_fabric kFabricOps = {
    .size = sizeof(struct fi_ops_fabric),
    .domain = DomainOpen,
    .passive_ep = PassiveEpOpen,
    .eq_open = EqOpen,
    .wait_open = WaitOpen,
    .trywait = TryWaitOp,
    .domain2 = Domain2,
};

}  // namespace

int Fabric::Open(struct fi_fabric_attr* attr, struct fid_fabric** fabric, void* context) {
  if (attr == nullptr || fabric == nullptr) {
    IWX_WARN(fabric, "fi_fabric: attr and fabric must not be NULL\n");
    return -FI_EINVAL;
  }
  if (attr->name != nullptr && std::strcmp(attr->name, kFabricName) != 0) {
    IWX_WARN(fabric, "fi_fabric: unknown fabric name '%s' (this provider has '%s')\n", attr->name,
             kFabricName);
    return -FI_ENODATA;
  }
  auto* f = new (std::nothrow) Fabric();
  if (f == nullptr) return -FI_ENOMEM;
  auto engine = progress::Engine::Create(f->clock_);
  if (!engine.ok()) {
    IWX_WARN(fabric, "fi_fabric: cannot create the progress engine: %s\n",
             strerror(engine.error().err));
    delete f;
    return -FI_ENOMEM;
  }
  f->engine_ = std::move(engine).value();
  f->engine_->set_hot_polling(GetParams().busy_poll);
  f->engine_->set_parking(GetParams().busy_poll_park);
  f->handle_.owner = f;
  f->handle_.fid.fid.fclass = FI_CLASS_FABRIC;
  f->handle_.fid.fid.context = context;
  f->handle_.fid.fid.ops = const_cast<struct fi_ops*>(&kFabricFiOps);
  f->handle_.fid.ops = const_cast<struct fi_ops_fabric*>(&kFabricOps);
  f->handle_.fid.api_version = attr->api_version;
  *fabric = f->fid();
  IWX_INFO(fabric, "fabric %p opened\n", static_cast<void*>(f));
  return 0;
}

Fabric* Fabric::From(struct fid_fabric* fabric) {
  if (fabric == nullptr || !IsOurs(&fabric->fid, FI_CLASS_FABRIC, &kFabricFiOps)) return nullptr;
  return OwnerOf<Fabric>(fabric);
}

int Fabric::Close() {
  if (const int refs = refs_.load(std::memory_order_acquire); refs != 0) {
    IWX_WARN(fabric, "fi_close(fabric %p): %d domain(s)/EQ(s) still open\n",
             static_cast<void*>(this), refs);
    return -FI_EBUSY;
  }
  {
    std::lock_guard<std::mutex> lock(thread_mu_);
    thread_.reset();  // stops before the engine goes
  }
  IWX_INFO(fabric, "fabric %p closed\n", static_cast<void*>(this));
  delete this;
  return 0;
}

void Fabric::Progress() {
  if (auto_progress_.load(std::memory_order_relaxed)) {
    std::unique_lock<std::mutex> lock(engine_->mu(), std::try_to_lock);
    if (lock.owns_lock()) engine_->RunOnce(0);
    return;
  }
  std::lock_guard<std::mutex> lock(engine_->mu());
  engine_->RunOnce(0);
}

void Fabric::StartProgressThread() {
  std::lock_guard<std::mutex> lock(thread_mu_);
  if (thread_) return;
  StopParking("a progress thread starts");  // it sleeps on the epoll set
  thread_ = progress::ProgressThread::Start(*engine_, /*bind=*/true);
  auto_progress_.store(true);
  IWX_INFO(fabric, "fabric %p: progress thread started (FI_PROGRESS_AUTO)\n",
           static_cast<void*>(this));
}

void Fabric::StopParking(const char* why) {
  std::lock_guard<std::mutex> lock(engine_->mu());
  if (!parking_stopped_) {
    IWX_INFO(fabric, "fabric %p: busy-polled sockets stay in the epoll set from now on: %s\n",
             static_cast<void*>(this), why);
  }
  parking_stopped_ = true;
  engine_->set_parking(false);
}

int Fabric::TryWait(struct fid** fids, int count) {
  if (count < 0 || (count > 0 && fids == nullptr)) {
    IWX_WARN(fabric, "fi_trywait: bad fid array (count %d)\n", count);
    return -FI_EINVAL;
  }
  for (int i = 0; i < count; ++i) {
    struct fid* f = fids[i];
    int ret = -FI_EINVAL;
    if (Cq* cq = Cq::From(f)) {
      ret = cq->TryWait();
    } else if (Eq* eq = Eq::From(f)) {
      ret = eq->TryWait();
    } else if (Cntr* cntr = Cntr::From(f)) {
      ret = cntr->TryWait();
    } else {
      IWX_WARN(fabric, "fi_trywait: fid %d (class %zu) is not a CQ, EQ or counter of iwarpx\n", i,
               f != nullptr ? f->fclass : size_t{0});
    }
    if (ret != 0) return ret;
  }
  return 0;
}

int FabricOpen(struct fi_fabric_attr* attr, struct fid_fabric** fabric, void* context) {
  return Fabric::Open(attr, fabric, context);
}

}  // namespace iwarpx::ofi

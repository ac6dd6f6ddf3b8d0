// The CEP over real loopback TCP, driven by a Poller as the progress engine
// will drive it (bounded: at most 5 s of polling).
#include <chrono>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "base/clock.h"
#include "cm/cep.h"
#include "transport/poller.h"
#include "transport/tcp.h"
#include "wire/mpa_negotiate.h"

namespace iwarpx::cm {
namespace {

using wire::MpaPolicy;

ByteSpan Span(const char* s) {
  return {reinterpret_cast<const uint8_t*>(s), std::char_traits<char>::length(s)};
}

std::string Str(ByteSpan b) {
  return {b.begin(), b.end()};
}

uint32_t Interest(const Cep& c) {
  return (c.wants_read() ? transport::Poller::kReadable : 0U) |
         (c.wants_write() ? transport::Poller::kWritable : 0U);
}

TEST(CepTcpTest, HandshakeOverLoopback) {
  using transport::Poller;
  MonotonicClock clock;
  auto listener = transport::TcpListener::Listen(transport::SockAddr::Loopback4(), 4);
  ASSERT_TRUE(listener.ok());
  auto client = transport::TcpConnection::Connect((*listener)->local_address());
  ASSERT_TRUE(client.ok());
  auto poller = Poller::Create();
  ASSERT_TRUE(poller.ok());

  auto ini_or = Cep::CreateInitiator(**client, clock, MpaPolicy{}, Span("over tcp"));
  ASSERT_TRUE(ini_or.ok());
  std::unique_ptr<Cep> ini = std::move(ini_or).value();
  std::unique_ptr<transport::Connection> server;
  std::unique_ptr<Cep> resp;
  constexpr uint64_t kListen = 1;
  constexpr uint64_t kClient = 2;
  constexpr uint64_t kServer = 3;
  ASSERT_TRUE((*poller)->Add((*listener)->fd(), Poller::kReadable, kListen).ok());
  ASSERT_TRUE((*poller)->Add((*client)->fd(), Interest(*ini), kClient).ok());

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  transport::PollEvent events[8];
  while (std::chrono::steady_clock::now() < deadline &&
         !(IsTerminal(ini->state()) && resp && IsTerminal(resp->state()))) {
    auto w = (*poller)->Wait(50, events);
    ASSERT_TRUE(w.ok());
    for (size_t i = 0; i < w->count; ++i) {
      const uint32_t ev = events[i].events;
      if (events[i].token == kListen && !server) {
        auto s = (*listener)->Accept();
        if (!s.ok()) continue;
        server = std::move(s).value();
        auto r = Cep::CreateResponder(*server, clock, MpaPolicy{});
        ASSERT_TRUE(r.ok());
        resp = std::move(r).value();
        ASSERT_TRUE((*poller)->Add(server->fd(), Interest(*resp), kServer).ok());
        continue;
      }
      Cep* c = events[i].token == kClient ? ini.get() : resp.get();
      if (c == nullptr) continue;
      if ((ev & (Poller::kWritable | Poller::kError | Poller::kHangup)) != 0) c->OnWritable();
      if ((ev & (Poller::kReadable | Poller::kError | Poller::kHangup)) != 0) c->OnReadable();
    }
    if (resp && resp->state() == CepState::kRequestReceived) {
      ASSERT_TRUE(resp->Accept(Span("welcome")).ok());
    }
    ini->OnTimer();
    if (resp) resp->OnTimer();
    ASSERT_TRUE((*poller)->Modify((*client)->fd(), Interest(*ini), kClient).ok());
    if (resp) {
      ASSERT_TRUE((*poller)->Modify(server->fd(), Interest(*resp), kServer).ok());
    }
  }
  ASSERT_TRUE(resp);
  ASSERT_EQ(ini->state(), CepState::kEstablished) << ToString(ini->state());
  ASSERT_EQ(resp->state(), CepState::kEstablished) << ToString(resp->state());
  EXPECT_EQ(Str(ini->peer_private_data()), "welcome");
  EXPECT_EQ(Str(resp->peer_private_data()), "over tcp");
  EXPECT_TRUE(ini->outcome()->send_rtr);
  EXPECT_TRUE(resp->outcome()->established_after_rtr);
  EXPECT_EQ(ini->outcome()->rtr, resp->outcome()->rtr);
}

}  // namespace
}  // namespace iwarpx::cm

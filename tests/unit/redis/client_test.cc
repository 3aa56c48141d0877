// redis::Client against a real redis-server (tests/shared/redis_server.h):
// replies of each shape, AUTH, a server that is down, one that hangs, one
// that dies and comes back, a connection lost under a pending command,
// fail(), close(), the blocking start-up exchange, and the log lines (one
// per change of state). "No busy loop" is checked by counting loop
// iterations and connection attempts, never by timing.
#include "redis/client.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <optional>
#include <string>
#include <vector>

#include "client_fixture.h"

namespace tlsfront::redis {
namespace {

class RedisClient : public RedisClientFixture {};

TEST_F(RedisClient, RepliesOfEveryShapeOnOneConnection) {
  ASSERT_TRUE(redis_.start());
  Client& c = make_client(options(redis_.port()));
  Got got;
  const std::string binary("v\0\xff", 3);
  ASSERT_TRUE(c.command({"SET", "k", binary}, record(got)));
  EXPECT_FALSE(got.called) << "never called from inside command()";
  ASSERT_TRUE(run_until([&] { return got.called; }));
  EXPECT_FALSE(got.error);
  EXPECT_EQ(got.type, Reply::Type::Status);
  EXPECT_EQ(got.str, "OK");

  ASSERT_TRUE(call({"GET", "k"}, got));
  EXPECT_EQ(got.type, Reply::Type::String);
  EXPECT_EQ(got.str, binary);
  ASSERT_TRUE(call({"GET", "missing"}, got));
  EXPECT_EQ(got.type, Reply::Type::Nil);
  ASSERT_TRUE(call({"INCR", "n"}, got));
  EXPECT_EQ(got.type, Reply::Type::Integer);
  EXPECT_EQ(got.integer, 1);
  ASSERT_TRUE(call({"MGET", "k", "missing"}, got));
  EXPECT_EQ(got.type, Reply::Type::Array);
  ASSERT_EQ(got.elements.size(), 2u);
  EXPECT_EQ(got.elements[0], binary);
  EXPECT_EQ(got.elements[1], std::nullopt);
  // An error reply is a reply: the user decides what it means.
  ASSERT_TRUE(call({"NO-SUCH-COMMAND"}, got));
  EXPECT_FALSE(got.error);
  EXPECT_EQ(got.type, Reply::Type::Error);
  EXPECT_NE(got.str.find("unknown command"), std::string::npos) << got.str;

  const std::vector<std::string> argv{"GET", "k"};
  got = Got{};
  ASSERT_TRUE(c.command(argv, record(got)));
  ASSERT_TRUE(run_until([&] { return got.called; }));
  EXPECT_EQ(got.str, binary);
  EXPECT_FALSE(c.failing());
  EXPECT_EQ(c.connects(), 1u);
}

// A reply past the client's bound (16 MiB) is not buffered on: the command
// fails with why, the connection is dropped, and a reply below it still
// comes whole. (Redis stores strings up to 512 MiB: a key written by
// anyone with access to the server makes a reply this large.)
TEST_F(RedisClient, AReplyPastTheBoundFailsInsteadOfGrowingMemory) {
  ASSERT_TRUE(redis_.start());
  Options o = options(redis_.port());
  o.timeout = milliseconds(5'000);
  Client& c = make_client(std::move(o));
  Got got;
  ASSERT_TRUE(call({"SET", "big", std::string((16 << 20) + 1024, 'x')}, got));
  ASSERT_FALSE(got.error) << got.error->message();
  ASSERT_TRUE(call({"SET", "fits", std::string(1 << 20, 'y')}, got));
  ASSERT_TRUE(call({"GET", "fits"}, got));
  ASSERT_FALSE(got.error) << got.error->message();
  EXPECT_EQ(got.str.size(), size_t{1} << 20);
  ASSERT_TRUE(call({"GET", "big"}, got));
  ASSERT_TRUE(got.error);
  EXPECT_NE(got.error->message().find("a reply larger than 16 MiB"), std::string::npos) << got.error->message();
  EXPECT_TRUE(c.failing());
}

TEST_F(RedisClient, UnixSocket) {
  const std::string socket = dir_.file("redis.sock");
  ASSERT_TRUE(redis_.start({"--unixsocket", socket, "--unixsocketperm", "700"}));
  Options o = options(0);
  o.unix_socket = socket;
  Client& c = make_client(std::move(o));
  EXPECT_EQ(c.where(), "unix:" + socket);
  Got got;
  ASSERT_TRUE(call({"PING"}, got));
  EXPECT_FALSE(got.error);
  EXPECT_EQ(got.str, "PONG");
}

TEST_F(RedisClient, AuthenticatesAndReportsARefusedPassword) {
  ASSERT_TRUE(redis_.start({"--requirepass", "right"}, "right"));
  Options o = options(redis_.port());
  o.password = Secret("right");
  Client& good = make_client(std::move(o));
  Got got;
  ASSERT_TRUE(call({"SET", "k", "v"}, got));
  EXPECT_FALSE(got.error);
  EXPECT_EQ(got.str, "OK");
  good.close();

  Options bad = options(redis_.port());
  bad.password = Secret("wrong");
  LogCapture capture;
  Client& c = make_client(std::move(bad));
  ASSERT_TRUE(call({"GET", "k"}, got));
  const std::string log = capture.take();
  ASSERT_TRUE(got.error);
  EXPECT_EQ(got.error->code, Errc::Upstream);
  EXPECT_NE(got.error->detail.find("AUTH refused"), std::string::npos) << got.error->detail;
  EXPECT_TRUE(c.failing());
  EXPECT_EQ(count(log, "AUTH refused"), 1u) << log;
  EXPECT_EQ(log.find("wrong"), std::string::npos) << "the password is never logged: " << log;
}

// Nothing listens: the command fails (or is refused at once), then the
// client backs off: commands are refused at once, nothing runs meanwhile,
// and a stream of commands makes only a few connection attempts.
TEST_F(RedisClient, ServerDownFailsThenBacksOffWithoutBusyLoop) {
  Client& c = make_client(options(itest::free_port()));
  Got got;
  LogCapture capture;
  if (c.command({"GET", "k"}, record(got))) {
    iterations_ = 0;
    ASSERT_TRUE(run_until([&] { return got.called; }));
    EXPECT_LT(iterations_, 20u) << "the loop spun while waiting";
    // Refused, or (hiredis 0.14's libuv adapter ignores poll errors) no
    // answer by the deadline.
    ASSERT_TRUE(got.error);
    EXPECT_TRUE(got.error->code == Errc::Closed || got.error->code == Errc::Timeout) << got.error->detail;
  }
  EXPECT_TRUE(c.failing());
  EXPECT_GT(c.retry_in().count(), 0);
  got = Got{};
  EXPECT_FALSE(c.command({"GET", "k"}, record(got))) << "refused at once while backing off";

  // Idle after trouble: the client arms nothing that keeps waking the loop.
  iterations_ = 0;
  run_for(milliseconds(300));
  EXPECT_LT(iterations_, 10u);

  // A command every 10 ms for a second: only the backoff's few attempts.
  const uint64_t before = c.connects();
  uv_timer_t tick;
  uv_timer_init(&loop_, &tick);
  tick.data = &c;
  uv_timer_start(&tick, [](uv_timer_t* t) { static_cast<Client*>(t->data)->command({"GET", "k"}, [](Result<Reply>) {}); },
                 10, 10);
  run_for(milliseconds(1'000));
  uv_close(reinterpret_cast<uv_handle_t*>(&tick), nullptr);
  run_for(milliseconds(1));
  const std::string log = capture.take();
  EXPECT_LE(c.connects() - before, 8u) << "reconnects without backing off";
  EXPECT_GE(c.connects() - before, 1u) << "never retried";
  EXPECT_EQ(count(log, "unit: redis 127.0.0.1:"), 1u) << "one line per change of state:\n" << log;
  EXPECT_NE(log.find("; carrying on"), std::string::npos) << log;
}

// A closed loopback port: the connection is refused, and that is what the
// command's error and the log say (not "no answer within N ms", which
// stays for a server that accepted and does not answer), for the
// asynchronous client and the blocking start-up exchange alike.
TEST_F(RedisClient, ARefusedConnectionSaysSoNotTimeout) {
  const int port = itest::free_port();
  const std::string refused = "cannot connect to 127.0.0.1:" + std::to_string(port) + ": Connection refused";
  Options o = options(port);
  o.timeout = milliseconds(50);
  Client& c = make_client(std::move(o));
  Got got;
  LogCapture capture;
  if (c.command({"GET", "k"}, record(got))) {  // else refused at once, by the connect itself
    ASSERT_TRUE(run_until([&] { return got.called; }));
    ASSERT_TRUE(got.error);
    EXPECT_EQ(got.error->code, Errc::Closed) << got.error->detail;
    EXPECT_EQ(got.error->detail, refused);
  }
  EXPECT_TRUE(c.failing());
  const std::string log = capture.take();
  EXPECT_EQ(count(log, "unit: redis 127.0.0.1:" + std::to_string(port) + ": " + refused + "; carrying on"), 1u) << log;
  EXPECT_EQ(count(log, "no answer within"), 0u) << log;

  Status st =
      Client(options(port)).call_blocking(std::vector<std::vector<std::string>>{{"PING"}}, [](size_t, Reply) -> Status {
        return {};
      });
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().detail, refused);
}

// A server that accepts but does not answer: the command times out, with
// the connection dropped; once the server answers again a new connection
// is used.
TEST_F(RedisClient, CommandTimesOutWhenTheServerHangs) {
  ASSERT_TRUE(redis_.start());
  Client& c = make_client(options(redis_.port()));
  Got got;
  ASSERT_TRUE(call({"SET", "k", "v"}, got));
  ASSERT_FALSE(got.error);
  redis_.pause();
  LogCapture capture;
  got = Got{};
  ASSERT_TRUE(c.command({"GET", "k"}, record(got)));
  iterations_ = 0;
  ASSERT_TRUE(run_until([&] { return got.called; }));
  EXPECT_LT(iterations_, 20u) << "the loop spun while waiting for the deadline";
  ASSERT_TRUE(got.error);
  EXPECT_EQ(got.error->code, Errc::Timeout);
  EXPECT_EQ(got.error->detail, "no answer within 300 ms");
  EXPECT_TRUE(c.failing());
  EXPECT_FALSE(c.command({"GET", "k"}, record(got))) << "refused while backing off";

  redis_.resume();
  run_for(c.retry_in() + milliseconds(5));
  ASSERT_TRUE(call({"GET", "k"}, got));
  ASSERT_FALSE(got.error) << got.error->detail;
  EXPECT_EQ(got.str, "v");
  EXPECT_EQ(c.connects(), 2u);
  EXPECT_TRUE(c.failing()) << "healthy only when the user says so";
  c.answered();
  EXPECT_FALSE(c.failing());
  c.answered();
  const std::string log = capture.take();
  EXPECT_EQ(count(log, "unit: redis 127.0.0.1:" + std::to_string(redis_.port()) + ": no answer within 300 ms"), 1u)
      << log;
  EXPECT_EQ(count(log, "is in use again"), 1u) << log;
}

TEST_F(RedisClient, ReconnectsAfterTheServerDiesAndComesBack) {
  ASSERT_TRUE(redis_.start());
  Client& c = make_client(options(redis_.port()));
  Got got;
  ASSERT_TRUE(call({"SET", "k", "v"}, got));
  ASSERT_FALSE(got.error);
  EXPECT_EQ(c.connects(), 1u);

  LogCapture capture;
  redis_.stop();
  run_for(milliseconds(50));  // the idle connection closes: nobody was waiting, nothing to say
  EXPECT_FALSE(c.failing());
  // Down: commands fail, and keep failing while it stays down.
  for (int i = 0; i < 3; ++i) {
    if (call({"GET", "k"}, got)) {
      ASSERT_TRUE(got.error) << "attempt " << i;
      EXPECT_TRUE(got.error->code == Errc::Closed || got.error->code == Errc::Timeout) << got.error->detail;
    }
    EXPECT_TRUE(c.failing());
    run_for(c.retry_in() + milliseconds(5));
  }
  // Back (empty, on the same port): the next command after the backoff reconnects.
  ASSERT_TRUE(redis_.start({}, "", /*same_port=*/true));
  bool answered = false;
  for (int i = 0; i < 20 && !answered; ++i) {
    run_for(c.retry_in() + milliseconds(5));
    if (call({"SET", "k", "again"}, got)) answered = !got.error;
  }
  ASSERT_TRUE(answered);
  EXPECT_GE(c.connects(), 3u);
  c.answered();
  EXPECT_FALSE(c.failing());
  ASSERT_TRUE(call({"GET", "k"}, got));
  EXPECT_EQ(got.str, "again");
  const std::string log = capture.take();
  // One line per change of state (down may show as either problem).
  EXPECT_LE(count(log, "cannot connect"), 1u) << log;
  EXPECT_LE(count(log, "no answer within"), 1u) << log;
  EXPECT_GE(count(log, "unit: redis 127.0.0.1:" + std::to_string(redis_.port()) + ": "), 1u) << log;
  EXPECT_EQ(count(log, "unit: redis 127.0.0.1:" + std::to_string(redis_.port()) + " is in use again"), 1u) << log;
}

// BLPOP waits forever: the connection is killed under it.
TEST_F(RedisClient, ConnectionLostUnderAPendingCommandFailsIt) {
  ASSERT_TRUE(redis_.start());
  Options o = options(redis_.port());
  o.timeout = milliseconds(10'000);  // the kill, not the deadline, ends it
  Client& c = make_client(std::move(o));
  Got got;
  ASSERT_TRUE(call({"PING"}, got));
  got = Got{};
  ASSERT_TRUE(c.command({"BLPOP", "nothing", "0"}, record(got)));
  run_for(milliseconds(20));
  ASSERT_FALSE(got.called);
  EXPECT_NE(redis_.cli({"CLIENT", "KILL", "TYPE", "normal"}).out, "0\n");
  ASSERT_TRUE(run_until([&] { return got.called; }));
  ASSERT_TRUE(got.error);
  EXPECT_EQ(got.error->code, Errc::Closed);
  EXPECT_NE(got.error->detail.find("connection lost"), std::string::npos) << got.error->detail;
  EXPECT_TRUE(c.failing());
}

TEST_F(RedisClient, FailDropsTheConnectionAndFailsPendingCommandsLater) {
  ASSERT_TRUE(redis_.start());
  Options o = options(redis_.port());
  o.timeout = milliseconds(10'000);
  Client& c = make_client(std::move(o));
  Got got, ping;
  ASSERT_TRUE(call({"PING"}, ping));
  ASSERT_TRUE(c.command({"BLPOP", "nothing", "0"}, record(got)));
  c.fail("the reply made no sense");
  EXPECT_FALSE(got.called) << "never called from inside fail()";
  ASSERT_TRUE(run_until([&] { return got.called; }));
  ASSERT_TRUE(got.error);
  EXPECT_EQ(got.error->code, Errc::Upstream);
  EXPECT_EQ(got.error->detail, "the reply made no sense");
  run_for(c.retry_in() + milliseconds(5));
  ASSERT_TRUE(call({"PING"}, ping));
  EXPECT_FALSE(ping.error);
  EXPECT_EQ(c.connects(), 2u);
}

TEST_F(RedisClient, CloseForgetsPendingCallbacksAndRefusesCommands) {
  ASSERT_TRUE(redis_.start());
  Options o = options(redis_.port());
  o.timeout = milliseconds(100);
  Client& c = make_client(std::move(o));
  Got got;
  ASSERT_TRUE(c.command({"BLPOP", "nothing", "0"}, record(got)));
  c.close();
  run_for(milliseconds(200));
  EXPECT_FALSE(got.called);
  EXPECT_FALSE(c.command({"PING"}, record(got)));
}

TEST_F(RedisClient, BlockingExchangeForStartUp) {
  ASSERT_TRUE(redis_.start({"--requirepass", "pw"}, "pw"));
  Options o = options(redis_.port());
  o.password = Secret("pw");
  Client c(std::move(o));  // not started: the blocking path needs no loop
  const std::vector<std::vector<std::string>> commands{{"SET", "a", "1"}, {"MGET", "a", "b"}};
  std::vector<std::string> seen;
  Status st = c.call_blocking(commands, [&](size_t i, Reply r) -> Status {
    seen.push_back(std::to_string(i) + ":" + (r.type() == Reply::Type::Array ? std::string(r[0].str()) : std::string(r.str())));
    return {};
  });
  ASSERT_TRUE(st) << st.error().message();
  EXPECT_EQ(seen, (std::vector<std::string>{"0:OK", "1:1"}));
  // on_reply's error stops the exchange and is returned.
  st = c.call_blocking(commands, [](size_t, Reply) -> Status { return make_error(Errc::Protocol, "no thanks"); });
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message(), "no thanks");

  Options wrong = options(redis_.port());
  wrong.password = Secret("nope");
  st = Client(std::move(wrong)).call_blocking(commands, [](size_t, Reply) -> Status { return {}; });
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message().find("AUTH refused"), std::string::npos) << st.error().message();

  redis_.stop();
  st = c.call_blocking(commands, [](size_t, Reply) -> Status { return {}; });
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message().find("cannot connect"), std::string::npos) << st.error().message();
  EXPECT_FALSE(c.failing()) << "the blocking path changes no state";
}

}  // namespace
}  // namespace tlsfront::redis

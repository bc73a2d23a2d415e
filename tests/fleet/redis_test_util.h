// Redis for the fleet tests: the shared server scripts/test.sh started
// (SHAPESHIFT_TEST_REDIS=127.0.0.1:PORT; each test takes a database of its
// own, so parallel ctest processes never see each other's keys), a raw client
// for poisoning and inspecting entries, and servers a test owns (to kill or
// fill them).
#ifndef SHAPESHIFT_TESTS_FLEET_REDIS_TEST_UTIL_H_
#define SHAPESHIFT_TESTS_FLEET_REDIS_TEST_UTIL_H_

#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace shapeshift::testing {

// "127.0.0.1:PORT" of the shared server; a test failure (not a skip) when the
// suite was started without one.
inline std::string SharedRedisAddress() {
  const char* address = std::getenv("SHAPESHIFT_TEST_REDIS");
  if (address == nullptr || address[0] == '\0') {
    ADD_FAILURE() << "SHAPESHIFT_TEST_REDIS is not set: these tests need a redis-server. scripts/test.sh starts one; "
                     "by hand: scripts/with-redis.sh ctest --test-dir build -R Redis";
    return "";
  }
  return address;
}

// A raw connection, for what the cache under test must not do itself.
class RedisClient {
 public:
  RedisClient(const std::string& host, int port, int db) {
    context_ = redisConnect(host.c_str(), port);
    if (context_ == nullptr || context_->err != 0) {
      ADD_FAILURE() << "cannot connect to redis at " << host << ":" << port;
      return;
    }
    Command({"SELECT", std::to_string(db)});
  }
  ~RedisClient() {
    if (context_ != nullptr) redisFree(context_);
  }
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  // The reply as text: a string, an integer, "nil", "OK", or "ERR ..." ;
  // arrays as their elements joined by '\n'.
  std::string Command(const std::vector<std::string>& args) {
    if (context_ == nullptr || context_->err != 0) return "ERR no connection";
    std::vector<const char*> argv;
    std::vector<size_t> lengths;
    for (const std::string& a : args) {
      argv.push_back(a.data());
      lengths.push_back(a.size());
    }
    auto* r = static_cast<redisReply*>(redisCommandArgv(context_, static_cast<int>(argv.size()), argv.data(),
                                                        lengths.data()));
    if (r == nullptr) return "ERR io";
    std::string out = Text(r);
    freeReplyObject(r);
    return out;
  }
  std::vector<std::string> Keys(const std::string& pattern) {
    std::vector<std::string> keys;
    std::string all = Command({"KEYS", pattern});
    size_t start = 0;
    while (start < all.size()) {
      size_t end = all.find('\n', start);
      if (end == std::string::npos) end = all.size();
      if (end > start) keys.push_back(all.substr(start, end - start));
      start = end + 1;
    }
    return keys;
  }

 private:
  static std::string Text(const redisReply* r) {
    switch (r->type) {
      case REDIS_REPLY_STRING:
      case REDIS_REPLY_STATUS:
        return std::string(r->str, r->len);
      case REDIS_REPLY_ERROR:
        return "ERR " + std::string(r->str, r->len);
      case REDIS_REPLY_INTEGER:
        return std::to_string(r->integer);
      case REDIS_REPLY_NIL:
        return "nil";
      case REDIS_REPLY_ARRAY: {
        std::string out;
        for (size_t i = 0; i < r->elements; ++i) out += (i ? "\n" : "") + Text(r->element[i]);
        return out;
      }
    }
    return "";
  }
  redisContext* context_ = nullptr;
};

// The shared server's host and port, split.
inline bool SplitAddress(const std::string& address, std::string* host, int* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return false;
  *host = address.substr(0, colon);
  *port = std::atoi(address.c_str() + colon + 1);
  return *port > 0;
}

// A loopback port nobody listens on right now.
inline int FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t n = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
  close(fd);
  return ntohs(a.sin_port);
}

// A redis-server this test owns: on a free loopback port, no persistence,
// its data dir in the test temp dir; killed (SIGKILL) by Kill or at the end.
class OwnRedisServer {
 public:
  explicit OwnRedisServer(std::vector<std::string> extra_args = {}) {
    for (int attempt = 0; attempt < 5 && pid_ <= 0; ++attempt) {
      port_ = FreeLoopbackPort();
      dir_ = ::testing::TempDir() + "/own_redis_" + std::to_string(getpid()) + "_" + std::to_string(port_);
      std::filesystem::create_directories(dir_);
      std::vector<std::string> args = {"redis-server", "--port", std::to_string(port_), "--bind", "127.0.0.1",
                                       "--dir", dir_, "--save", "", "--appendonly", "no", "--loglevel", "warning"};
      args.insert(args.end(), extra_args.begin(), extra_args.end());
      pid_t pid = fork();
      if (pid == 0) {
        // The server's log lines are not the test's output.
        const int null_fd = open("/dev/null", O_RDWR);
        dup2(null_fd, 1);
        dup2(null_fd, 2);
        std::vector<char*> argv;
        for (std::string& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        execvp("redis-server", argv.data());
        _exit(127);
      }
      pid_ = pid;
      if (!WaitUntilUp()) {
        Kill();
        pid_ = -1;
      }
    }
    if (pid_ <= 0) ADD_FAILURE() << "could not start a redis-server of this test's own (is redis-server on PATH?)";
  }
  ~OwnRedisServer() { Kill(); }
  OwnRedisServer(const OwnRedisServer&) = delete;
  OwnRedisServer& operator=(const OwnRedisServer&) = delete;

  int port() const { return port_; }
  std::string url(int db = 0) const { return "redis://127.0.0.1:" + std::to_string(port_) + "/" + std::to_string(db); }
  void Kill() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }

 private:
  bool WaitUntilUp() {
    for (int i = 0; i < 200; ++i) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return false;  // exited (e.g. the port was taken meanwhile)
      }
      redisContext* c = redisConnect("127.0.0.1", port_);
      if (c != nullptr && c->err == 0) {
        auto* r = static_cast<redisReply*>(redisCommand(c, "PING"));
        const bool up = r != nullptr && r->type == REDIS_REPLY_STATUS;
        if (r != nullptr) freeReplyObject(r);
        redisFree(c);
        if (up) return true;
      } else if (c != nullptr) {
        redisFree(c);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    return false;
  }

  pid_t pid_ = -1;
  int port_ = 0;
  std::string dir_;
};

}  // namespace shapeshift::testing

#endif  // SHAPESHIFT_TESTS_FLEET_REDIS_TEST_UTIL_H_

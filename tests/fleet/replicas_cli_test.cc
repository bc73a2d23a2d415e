// Replicas as real processes of the CLI sharing one Redis: four `shapeshift
// run` started together against an empty database make exactly one compile
// per distinct entry between them, a fifth makes none (and no LLVM work);
// poisoned entries (a record with a bad signature, a truncated object, an
// object copied under another key) are refused, rebuilt, and gone for the
// next replica; killing the server mid-trace loses no request.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/fleet/redis_test_util.h"

namespace shapeshift::testing {
namespace {

const std::string kModel = std::string(SHAPESHIFT_SOURCE_DIR) + "/tests/data/models/tiny_bert_opset14.onnx";

std::string TempFile(const std::string& name, const std::string& contents) {
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_" + name;
  std::ofstream(path) << contents;
  return path;
}

struct Replicas {
  std::string url;
  std::string host;
  int port = 0;
  int db = 0;
  std::string key_file = TempFile("replica_key", "replica-test-signing-key-0123456789\n");
  // Three distinct shapes, one repeated: three entries under --policy static.
  std::string trace = TempFile("replica_trace", "batch=1 sequence=5\nbatch=1 sequence=9\nbatch=2 sequence=17\n"
                                                "batch=1 sequence=5\n");

  explicit Replicas(int database) : db(database) {
    const std::string address = SharedRedisAddress();
    if (address.empty() || !SplitAddress(address, &host, &port)) return;
    url = "redis://" + address + "/" + std::to_string(db);
    RedisClient(host, port, db).Command({"FLUSHDB"});
  }

  std::string CommandLine() const {
    return std::string(SHAPESHIFT_CLI) + " run " + kModel +
           " --dim sequence=1..64 --dim batch=1..2 --policy static --trace file:" + trace +
           " --no-cache --json --remote-cache " + url + " --remote-cache-key-file " + key_file;
  }

  // `n` replicas started together; their JSON reports (a failure names the one
  // that did not produce one).
  std::vector<nlohmann::json> Run(int n) const {
    std::vector<FILE*> pipes;
    for (int i = 0; i < n; ++i) pipes.push_back(popen((CommandLine() + " 2>/dev/null").c_str(), "r"));
    std::vector<nlohmann::json> reports;
    for (int i = 0; i < n; ++i) {
      std::string out;
      char buffer[4096];
      size_t got;
      while (pipes[i] != nullptr && (got = fread(buffer, 1, sizeof(buffer), pipes[i])) > 0) out.append(buffer, got);
      const int status = pipes[i] != nullptr ? pclose(pipes[i]) : -1;
      EXPECT_EQ(status, 0) << "replica " << i << ": " << out;
      nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
      EXPECT_FALSE(j.is_discarded()) << "replica " << i << " printed: " << out;
      reports.push_back(j.is_discarded() ? nlohmann::json::object() : j);
    }
    return reports;
  }
};

int64_t Sum(const std::vector<nlohmann::json>& reports, const std::string& field) {
  int64_t total = 0;
  for (const nlohmann::json& r : reports) total += r.value(field, int64_t{0});
  return total;
}

int64_t SumRemote(const std::vector<nlohmann::json>& reports, const std::string& field) {
  int64_t total = 0;
  for (const nlohmann::json& r : reports) total += r.contains("remote") ? r["remote"].value(field, int64_t{0}) : 0;
  return total;
}

TEST(RedisReplicasCliTest, FourReplicasStartedTogetherCompileEachEntryOnceAndAFifthNone) {
  Replicas replicas(10);
  ASSERT_FALSE(replicas.url.empty());
  std::vector<nlohmann::json> four = replicas.Run(4);
  for (const nlohmann::json& r : four) {
    EXPECT_EQ(r.value("served", -1), 4) << r.dump();
    EXPECT_EQ(r.value("wrong_results", -1), 0) << r.dump();
    EXPECT_EQ(r.value("errors", -1), 0) << r.dump();
  }
  EXPECT_EQ(Sum(four, "compiles"), 3) << "one compile per distinct entry between the four replicas";
  EXPECT_EQ(SumRemote(four, "loads"), 9) << "the other three re-created each entry from Redis";
  EXPECT_EQ(SumRemote(four, "refused"), 0);

  std::vector<nlohmann::json> fifth = replicas.Run(1);
  ASSERT_EQ(fifth.size(), 1u);
  EXPECT_EQ(fifth[0].value("compiles", -1), 0) << fifth[0].dump();
  EXPECT_EQ(fifth[0].value("llvm_compiles", -1), 0) << fifth[0].dump();
  EXPECT_EQ(fifth[0].value("cache_loads", -1), 3) << fifth[0].dump();
  EXPECT_EQ(fifth[0].value("wrong_results", -1), 0) << fifth[0].dump();
}

TEST(RedisReplicasCliTest, PoisonedEntriesAreRefusedRebuiltAndGone) {
  Replicas replicas(11);
  ASSERT_FALSE(replicas.url.empty());
  ASSERT_EQ(Sum(replicas.Run(1), "compiles"), 3);
  RedisClient raw(replicas.host, replicas.port, replicas.db);
  // A record with a bad signature.
  const std::vector<std::string> hashes = raw.Keys("shapeshift:entries:*");
  ASSERT_EQ(hashes.size(), 1u);
  std::string record = raw.Command({"HGET", hashes[0], "static:1,5"});
  ASSERT_GT(record.size(), 40u) << record;
  record[10] ^= 0x01;
  raw.Command({"HSET", hashes[0], "static:1,5", record});
  // A truncated object, and one object's value copied under another's key.
  const std::vector<std::string> objects = raw.Keys("shapeshift:objects:*");
  ASSERT_GE(objects.size(), 3u);
  const std::string first = raw.Command({"GET", objects[0]});
  raw.Command({"SET", objects[1], first.substr(0, first.size() / 2)});
  raw.Command({"SET", objects[2], first});

  std::vector<nlohmann::json> after = replicas.Run(1);
  ASSERT_EQ(after.size(), 1u);
  const nlohmann::json& r = after[0];
  EXPECT_GE(r["remote"].value("refused", 0), 3) << r.dump();
  EXPECT_EQ(r.value("wrong_results", -1), 0) << r.dump();
  EXPECT_EQ(r.value("errors", -1), 0) << r.dump();
  EXPECT_GE(r.value("compiles", 0), 1) << "the refused record's entry was compiled again: " << r.dump();

  std::vector<nlohmann::json> clean = replicas.Run(1);
  ASSERT_EQ(clean.size(), 1u);
  EXPECT_EQ(clean[0].value("compiles", -1), 0) << clean[0].dump();
  EXPECT_EQ(clean[0].value("llvm_compiles", -1), 0) << "every refused object was rewritten: " << clean[0].dump();
  EXPECT_EQ(clean[0]["remote"].value("refused", -1), 0) << clean[0].dump();
}

TEST(RedisReplicasCliTest, KillingRedisMidTraceLosesNoRequest) {
  OwnRedisServer server;
  const std::string key_file = TempFile("kill_key", "replica-test-signing-key-0123456789\n");
  std::string trace;
  for (int seq : {3, 5, 7, 9, 11, 13, 15, 17}) trace += "batch=1 sequence=" + std::to_string(seq) + "\n";
  const std::string trace_file = TempFile("kill_trace", trace);
  const std::string command = std::string(SHAPESHIFT_CLI) + " run " + kModel +
                              " --dim sequence=1..64 --dim batch=1..2 --policy static --trace file:" + trace_file +
                              " --no-cache --json --remote-cache " + server.url() + " --remote-cache-key-file " +
                              key_file + " --remote-cache-timeout-ms 500 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  // Kill the server once the first entry is published: the trace's other
  // seven shapes are still to compile.
  {
    RedisClient watcher("127.0.0.1", server.port(), 0);
    bool published = false;
    for (int i = 0; i < 2400 && !published; ++i) {
      published = !watcher.Keys("shapeshift:entries:*").empty();
      if (!published) std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    EXPECT_TRUE(published) << "no entry was ever published";
  }
  server.Kill();
  std::string out;
  char buffer[4096];
  size_t got;
  while ((got = fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.append(buffer, got);
  EXPECT_EQ(pclose(pipe), 0) << out;
  nlohmann::json r = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(r.is_discarded()) << out;
  EXPECT_EQ(r.value("served", -1), 8) << r.dump();
  EXPECT_EQ(r.value("errors", -1), 0) << r.dump();
  EXPECT_EQ(r.value("wrong_results", -1), 0) << r.dump();
  EXPECT_EQ(r.value("compiles", -1), 8) << "every shape compiled, the later ones locally: " << r.dump();
  EXPECT_GE(r["remote"].value("errors", 0), 1) << r.dump();
}

}  // namespace
}  // namespace shapeshift::testing

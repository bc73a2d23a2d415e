// RecompileEvent: JSON round trip, the JSON-lines writer (file and
// environment), and the reader's line-numbered errors.
#include "runtime/specialization/recompile_event.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>
#include <string>

#include "gtest/gtest.h"

namespace shapeshift::runtime {
namespace {

RecompileEvent SampleMiss() {
  RecompileEvent e;
  e.sequence = 2;
  e.timestamp = "2026-11-30T04:30:00.000Z";
  e.trigger = RecompileTrigger::kMiss;
  e.policy = SpecializationPolicy::kStatic;
  e.symbols = {{"batch", 1}, {"seq", 37}};
  TriedEntry tried;
  tried.entry_id = 1;
  tried.tier = Tier::kStatic;
  tried.guards = {"batch == 1", "seq == 5"};
  tried.failing = {{"seq == 5", {"dispatcher", "", "static policy pins every dim"}}};
  e.tried = {tried};
  e.unsat_core = tried.failing;
  e.new_entry_id = 2;
  e.new_tier = Tier::kStatic;
  e.new_guards = {{"batch == 1", {"dispatcher", "", "static policy pins every dim"}},
                  {"seq == 37", {"memory-plan", "t3", "reuse a dead buffer's slot"}}};
  e.compile_ms = 12.5;
  return e;
}

void ExpectSameAtoms(const std::vector<AtomRecord>& a, const std::vector<AtomRecord>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].atom, b[i].atom);
    EXPECT_EQ(a[i].provenance.pass, b[i].provenance.pass);
    EXPECT_EQ(a[i].provenance.node, b[i].provenance.node);
    EXPECT_EQ(a[i].provenance.reason, b[i].provenance.reason);
  }
}

void ExpectSameEvent(const RecompileEvent& a, const RecompileEvent& b) {
  EXPECT_EQ(a.sequence, b.sequence);
  EXPECT_EQ(a.timestamp, b.timestamp);
  EXPECT_EQ(a.trigger, b.trigger);
  EXPECT_EQ(a.policy, b.policy);
  ASSERT_EQ(a.symbols.size(), b.symbols.size());
  for (size_t i = 0; i < a.symbols.size(); ++i) {
    EXPECT_EQ(a.symbols[i].name, b.symbols[i].name);
    EXPECT_EQ(a.symbols[i].value, b.symbols[i].value);
  }
  ASSERT_EQ(a.tried.size(), b.tried.size());
  for (size_t i = 0; i < a.tried.size(); ++i) {
    EXPECT_EQ(a.tried[i].entry_id, b.tried[i].entry_id);
    EXPECT_EQ(a.tried[i].tier, b.tried[i].tier);
    EXPECT_EQ(a.tried[i].guards, b.tried[i].guards);
    ExpectSameAtoms(a.tried[i].failing, b.tried[i].failing);
  }
  ExpectSameAtoms(a.unsat_core, b.unsat_core);
  EXPECT_EQ(a.new_entry_id, b.new_entry_id);
  EXPECT_EQ(a.new_tier, b.new_tier);
  ExpectSameAtoms(a.new_guards, b.new_guards);
  EXPECT_DOUBLE_EQ(a.compile_ms, b.compile_ms);
}

TEST(RecompileEventTest, JsonRoundTripKeepsEveryField) {
  const RecompileEvent e = SampleMiss();
  absl::StatusOr<RecompileEvent> back = RecompileEventFromJson(RecompileEventToJson(e));
  ASSERT_TRUE(back.ok()) << back.status();
  ExpectSameEvent(e, *back);
}

TEST(RecompileEventTest, MissingFieldIsNamed) {
  nlohmann::json j = RecompileEventToJson(SampleMiss());
  j["tried"][0]["failing"][0].erase("pass");
  absl::StatusOr<RecompileEvent> back = RecompileEventFromJson(j);
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.status().message().find("tried[0].failing[0].pass"), std::string::npos) << back.status();
}

TEST(RecompileEventTest, MistypedAndUnknownValuesAreNamed) {
  nlohmann::json j = RecompileEventToJson(SampleMiss());
  j["compile_ms"] = "fast";
  absl::StatusOr<RecompileEvent> back = RecompileEventFromJson(j);
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.status().message().find("compile_ms"), std::string::npos) << back.status();

  j = RecompileEventToJson(SampleMiss());
  j["trigger"] = "whim";
  back = RecompileEventFromJson(j);
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.status().message().find("whim"), std::string::npos) << back.status();
}

TEST(RecompileEventTest, ReaderNamesTheMalformedLine) {
  const std::string good = RecompileEventToJson(SampleMiss()).dump();
  absl::StatusOr<std::vector<RecompileEvent>> events =
      ParseRecompileLog(good + "\n\n" + good + "\n{not json\n", "log.jsonl");
  ASSERT_FALSE(events.ok());
  EXPECT_NE(events.status().message().find("log.jsonl:4:"), std::string::npos) << events.status();

  events = ParseRecompileLog(good + "\n\n" + good + "\n", "log.jsonl");
  ASSERT_TRUE(events.ok()) << events.status();
  EXPECT_EQ(events->size(), 2u);
}

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (name + std::to_string(::getpid()))).string();
}

TEST(RecompileEventTest, WriterAppendsLinesTheReaderReadsBack) {
  const std::string path = TempPath("recompile_log_");
  std::filesystem::remove(path);
  {
    absl::StatusOr<std::unique_ptr<RecompileLogWriter>> writer = RecompileLogWriter::Open(path);
    ASSERT_TRUE(writer.ok()) << writer.status();
    RecompileEvent e = SampleMiss();
    ASSERT_TRUE((*writer)->Append(e).ok());
    e.sequence = 3;
    ASSERT_TRUE((*writer)->Append(e).ok());
  }
  absl::StatusOr<std::vector<RecompileEvent>> events = ReadRecompileLog(path);
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_EQ(events->size(), 2u);
  ExpectSameEvent((*events)[0], SampleMiss());
  EXPECT_EQ((*events)[1].sequence, 3);
  std::filesystem::remove(path);
}

TEST(RecompileEventTest, WriterFromEnvironment) {
  ::unsetenv("SHAPESHIFT_RECOMPILE_LOG");
  absl::StatusOr<std::unique_ptr<RecompileLogWriter>> none = RecompileLogWriter::OpenFromEnvironment();
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(*none, nullptr);

  const std::string path = TempPath("recompile_env_log_");
  ::setenv("SHAPESHIFT_RECOMPILE_LOG", path.c_str(), 1);
  absl::StatusOr<std::unique_ptr<RecompileLogWriter>> writer = RecompileLogWriter::OpenFromEnvironment();
  ::unsetenv("SHAPESHIFT_RECOMPILE_LOG");
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_NE(*writer, nullptr);
  EXPECT_EQ((*writer)->path(), path);
  std::filesystem::remove(path);
}

TEST(RecompileEventTest, UnopenableLogIsAnErrorNamingThePath) {
  absl::StatusOr<std::unique_ptr<RecompileLogWriter>> writer =
      RecompileLogWriter::Open("/nonexistent-dir/recompile.jsonl");
  ASSERT_FALSE(writer.ok());
  EXPECT_NE(writer.status().message().find("/nonexistent-dir/recompile.jsonl"), std::string::npos);
  absl::StatusOr<std::vector<RecompileEvent>> events = ReadRecompileLog("/nonexistent-dir/recompile.jsonl");
  ASSERT_FALSE(events.ok());
  EXPECT_NE(events.status().message().find("/nonexistent-dir/recompile.jsonl"), std::string::npos);
}

TEST(RecompileEventTest, ADirectoryIsNoLogToReadOrWrite) {
  // Reading a directory used to give an empty log: "no recompile events".
  const std::string dir = ::testing::TempDir();
  absl::StatusOr<std::vector<RecompileEvent>> events = ReadRecompileLog(dir);
  ASSERT_FALSE(events.ok());
  EXPECT_NE(events.status().message().find("is a directory"), std::string::npos) << events.status();
  absl::StatusOr<std::unique_ptr<RecompileLogWriter>> writer = RecompileLogWriter::Open(dir);
  ASSERT_FALSE(writer.ok());
  EXPECT_NE(writer.status().message().find(dir), std::string::npos) << writer.status();
}

TEST(RecompileEventTest, NamesThatAreNotUtf8DoNotBreakTheWriter) {
  // Node and dim names come from the model file, bytes and all.
  const std::string path = TempPath("recompile_log_bytes_");
  std::filesystem::remove(path);
  {
    absl::StatusOr<std::unique_ptr<RecompileLogWriter>> writer = RecompileLogWriter::Open(path);
    ASSERT_TRUE(writer.ok()) << writer.status();
    RecompileEvent e = SampleMiss();
    e.new_guards[1].provenance.node = "t\xff\xfe" "3";
    ASSERT_TRUE((*writer)->Append(e).ok());
  }
  absl::StatusOr<std::vector<RecompileEvent>> events = ReadRecompileLog(path);
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].new_guards[1].provenance.node, "t\xef\xbf\xbd\xef\xbf\xbd" "3");  // U+FFFD each
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace shapeshift::runtime

#include "msgs/schema.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "msgs/types.hpp"

namespace edgevla {
namespace {

Tensor zeros(DType d, const Shape& s) {
  Tensor t = *Tensor::empty(d, s);
  std::memset(t.raw_data(), 0, t.nbytes());
  return t;
}

TEST(Schema, ImageChecksEncodingAgainstChannelsAndDtype) {
  EXPECT_TRUE(msgs::Image::make(zeros(DType::kU8, Shape{4, 4, 3}), "rgb8", "base").has_value());
  auto wrong_c = msgs::Image::make(zeros(DType::kU8, Shape{4, 4, 4}), "rgb8", "base");
  ASSERT_FALSE(wrong_c.has_value());
  EXPECT_NE(wrong_c.status().message().find("channels"), std::string::npos);
  auto wrong_t = msgs::Image::make(zeros(DType::kF32, Shape{4, 4, 3}), "rgb8", "base");
  ASSERT_FALSE(wrong_t.has_value());
  auto rank = msgs::Image::make(zeros(DType::kU8, Shape{4, 12}), "rgb8", "base");
  ASSERT_FALSE(rank.has_value());
  EXPECT_NE(rank.status().message().find("rank"), std::string::npos);
  EXPECT_FALSE(msgs::Image::make(zeros(DType::kU8, Shape{4, 4, 3}), "hsv", "base").has_value());
}

TEST(Schema, MissingFieldAndWrongFieldKindAreNamed) {
  Message m("Image", 1);
  m.set_tensor("pixels", zeros(DType::kU8, Shape{2, 2, 3}));
  m.set_field("encoding", std::string("rgb8"));
  auto s = validate(m, msgs::Image::schema());
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("'camera'"), std::string::npos);
  m.set_field("camera", std::int64_t{3});
  s = validate(m, msgs::Image::schema());
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("must be string"), std::string::npos);
}

TEST(Schema, VersionMismatchIsRejected) {
  Message m = *msgs::Image::make(zeros(DType::kU8, Shape{2, 2, 3}), "rgb8", "base");
  m.set_type("Image", 2);
  auto s = validate(m, msgs::Image::schema());
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("version 2"), std::string::npos);
}

TEST(Schema, BackboneOutputNamesItsFamily) {
  // The tensors are the family's to check (its action head engine); the family is required.
  Message m("BackboneOutput", 1);
  m.set_tensor("kv", zeros(DType::kBF16, Shape{2, 2, 10, 1, 8}));
  m.set_tensor("mask", zeros(DType::kBool, Shape{10}));
  auto s = validate(m, msgs::BackboneOutput::schema());
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("family"), std::string::npos) << s.message();
  m.set_field("family", std::string("pi0"));
  EXPECT_TRUE(validate(m, msgs::BackboneOutput::schema()).is_ok());
}

TEST(Schema, ObservationTokensNeedTheirMask) {
  Message m = *msgs::Observation::make(zeros(DType::kF32, Shape{8}));
  m.set_tensor("tokens", zeros(DType::kI32, Shape{5}));
  EXPECT_FALSE(validate(m, msgs::Observation::schema()).is_ok());
  m.set_tensor("token_mask", zeros(DType::kBool, Shape{5}));
  EXPECT_TRUE(validate(m, msgs::Observation::schema()).is_ok());
  m.set_tensor("image.base", zeros(DType::kF32, Shape{3, 8, 8}));
  EXPECT_TRUE(validate(m, msgs::Observation::schema()).is_ok());
  m.set_tensor("image.wrist", zeros(DType::kI32, Shape{3, 8, 8}));
  EXPECT_FALSE(validate(m, msgs::Observation::schema()).is_ok());
}

TEST(Schema, ActionChunkAndJointCommand) {
  EXPECT_TRUE(msgs::ActionChunk::make(zeros(DType::kF32, Shape{50, 32}), 0.02).has_value());
  EXPECT_FALSE(msgs::ActionChunk::make(zeros(DType::kF32, Shape{50}), 0.02).has_value());
  EXPECT_TRUE(msgs::JointCommand::make(zeros(DType::kF64, Shape{7})).has_value());
  EXPECT_FALSE(msgs::JointCommand::make(zeros(DType::kI32, Shape{7})).has_value());
}

TEST(Schema, EveryBuiltInTypeIsFindable) {
  for (const char* t : {"Image", "Observation", "BackboneOutput", "ActionChunk", "JointCommand", "NodeStatus"}) {
    const MessageSchema* s = find_schema(t);
    ASSERT_NE(s, nullptr) << t;
    EXPECT_EQ(s->type, t);
  }
  EXPECT_EQ(find_schema("Nope"), nullptr);
}

}  // namespace
}  // namespace edgevla

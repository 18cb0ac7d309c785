// The command line's number checks (host/cli/option_checks.hpp) on their own: each bound is
// accepted where the rule says and refused one step past it, with the message a user reads;
// text that is no number is left to the option's conversion; --help shows the rule in one word.
#include "host/cli/option_checks.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

namespace mixle::host {
namespace {

/// "" when `value` parses, else the parse error's text.
template <class T>
std::string parse(const CLI::Validator& check, const std::string& value) {
  CLI::App app;
  T target{};
  app.add_option("--x", target)->check(check);
  std::vector<std::string> args{value, "--x"};  // parse() takes them last to first
  try {
    app.parse(args);
    return "";
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
}

TEST(OptionValidators, AnIntegerFloorAcceptsItselfAndRefusesOneBelow) {
  const CLI::Validator check = at_least(1, "the restarts, ≥ 1");
  EXPECT_EQ(parse<int>(check, "1"), "");
  EXPECT_EQ(parse<int>(check, "1000000"), "");
  EXPECT_EQ(parse<int>(check, "0"), "--x: 0 is below 1; accepted: the restarts, ≥ 1");
  EXPECT_EQ(parse<int>(check, "-7"), "--x: -7 is below 1; accepted: the restarts, ≥ 1");
  EXPECT_EQ(parse<long long>(at_least(0, "zero or more"), "0"), "");
  EXPECT_EQ(parse<long long>(at_least(0, "zero or more"), "-1"), "--x: -1 is below 0; accepted: zero or more");
  // Not an integer: the conversion's own error, which names the text.
  const std::string text = parse<int>(check, "two");
  EXPECT_NE(text.find("two"), std::string::npos) << text;
  EXPECT_EQ(text.find("is below"), std::string::npos) << text;
}

TEST(OptionValidators, AnIntegerRangeAcceptsBothEndsAndRefusesPastEither) {
  const CLI::Validator check = whole_in(1, 4096, "1 to 4096");
  EXPECT_EQ(parse<int>(check, "1"), "");
  EXPECT_EQ(parse<int>(check, "4096"), "");
  EXPECT_EQ(parse<int>(check, "0"), "--x: 0 is below 1; accepted: 1 to 4096");
  EXPECT_EQ(parse<int>(check, "4097"), "--x: 4097 is above 4096; accepted: 1 to 4096");
  EXPECT_EQ(parse<long long>(whole_in(-3, -3, "-3 only"), "-3"), "");
  EXPECT_EQ(parse<long long>(whole_in(-3, -3, "-3 only"), "-2"), "--x: -2 is above -3; accepted: -3 only");
  // No ceiling: the largest integer passes.
  EXPECT_EQ(parse<long long>(at_least(0, "zero or more"), "9223372036854775807"), "");
}

TEST(OptionValidators, ARealFloorAcceptsItselfUnlessOpen) {
  const CLI::Validator closed = number_at_least(0, "≥ 0");
  EXPECT_EQ(parse<double>(closed, "0"), "");
  EXPECT_EQ(parse<double>(closed, "-0"), "");
  EXPECT_EQ(parse<double>(closed, "2.5e3"), "");
  EXPECT_EQ(parse<double>(closed, "-1e-300"), "--x: -1e-300 is below 0; accepted: ≥ 0");
  const CLI::Validator open = number_above(0, "> 0");
  EXPECT_EQ(parse<double>(open, "0"), "--x: 0 is not above 0; accepted: > 0");
  EXPECT_EQ(parse<double>(open, "1e-300"), "");
  const CLI::Validator half = number_above(0.5, "above a half");
  EXPECT_EQ(parse<double>(half, "0.5"), "--x: 0.5 is not above 0.5; accepted: above a half");
  EXPECT_EQ(parse<double>(half, "0.5000001"), "");
}

TEST(OptionValidators, ARangeKeepsItsCeilingAndRefusesWhatIsNotFinite) {
  const CLI::Validator check = number_in(0, true, 1, "a probability in (0, 1]");
  EXPECT_EQ(parse<double>(check, "1"), "");
  EXPECT_EQ(parse<double>(check, "0.25"), "");
  EXPECT_EQ(parse<double>(check, "1.0000001"), "--x: 1.0000001 is above 1; accepted: a probability in (0, 1]");
  EXPECT_EQ(parse<double>(check, "0"), "--x: 0 is not above 0; accepted: a probability in (0, 1]");
  for (const char* bad : {"nan", "inf", "-inf", "1e999"})
    EXPECT_EQ(parse<double>(check, bad),
              std::string("--x: ") + bad + " is not a finite number; accepted: a probability in (0, 1]");
  EXPECT_EQ(parse<double>(number_at_least(0, "≥ 0"), "inf"), "--x: inf is not a finite number; accepted: ≥ 0");
  const std::string text = parse<double>(check, "half");
  EXPECT_EQ(text.find("accepted: a probability"), std::string::npos) << text;
}

// CLI11's conversion takes a sign, C's base prefixes (0x…, and a leading 0 as octal) and long
// double exponents: each form is checked as the value the option receives, none slips past.
TEST(OptionValidators, EveryFormTheConversionTakesIsCheckedAsItsValue) {
  const CLI::Validator one = at_least(1, "≥ 1");
  EXPECT_EQ(parse<int>(one, "+0"), "--x: +0 is below 1; accepted: ≥ 1");
  EXPECT_EQ(parse<int>(one, "0x0"), "--x: 0x0 is below 1; accepted: ≥ 1");
  EXPECT_EQ(parse<int>(one, "00"), "--x: 00 is below 1; accepted: ≥ 1");
  EXPECT_EQ(parse<int>(one, "+1"), "");
  EXPECT_EQ(parse<int>(whole_in(1, 16, "1 to 16"), "0x11"), "--x: 0x11 is above 16; accepted: 1 to 16");
  EXPECT_EQ(parse<int>(whole_in(1, 16, "1 to 16"), "0x10"), "");
  const CLI::Validator open = number_above(0, "> 0");
  EXPECT_EQ(parse<double>(open, "+0"), "--x: +0 is not above 0; accepted: > 0");
  EXPECT_EQ(parse<double>(open, "0x0p0"), "--x: 0x0p0 is not above 0; accepted: > 0");
  EXPECT_EQ(parse<double>(open, "-0x1p-3"), "--x: -0x1p-3 is not above 0; accepted: > 0");
  EXPECT_EQ(parse<double>(open, "+1e400"), "--x: +1e400 is not a finite number; accepted: > 0");
  EXPECT_EQ(parse<double>(open, "0x1p-3"), "");
}

// Integers are decimal: leading zeros dropped before the checks run, a hexadecimal prefix
// refused; an option group's integers and a subcommand's too. Other options are untouched.
TEST(OptionValidators, IntegersAreDecimal) {
  for (const auto& [text, want] : std::vector<std::pair<std::string, std::string>>{{"010", "10"},
                                                                                   {"-007", "-7"},
                                                                                   {"+0010", "+10"},
                                                                                   {"000", "0"},
                                                                                   {"0", "0"},
                                                                                   {"7", "7"},
                                                                                   {"-0", "-0"},
                                                                                   {"", ""},
                                                                                   {"-", "-"},
                                                                                   {"0.5", "0.5"},
                                                                                   {"01e3", "01e3"}})
    EXPECT_EQ(decimal_integer(text), want) << text;
  for (const char* hex : {"0x10", "0X1f", "-0x1"}) EXPECT_THROW(decimal_integer(hex), CLI::ValidationError) << hex;

  CLI::App app;
  int top = 0;
  long long grouped = 0;
  unsigned sub_value = 0;
  double real = 0;
  std::string text;
  app.add_option("--top", top)->check(at_least(9, "nine or more"));
  app.add_option_group("group")->add_option("--grouped", grouped);
  CLI::App* sub = app.add_subcommand("sub");
  sub->add_option("--value", sub_value);
  sub->add_option("--real", real);
  sub->add_option("--text", text);
  decimal_integers(app);
  // parse() takes them last to first: --top 010 --grouped -010 sub --value 010 --real 010 --text 010
  std::vector<std::string> args{"010", "--text", "010",       "--real", "010",  "--value",
                                "sub", "-010",   "--grouped", "010",    "--top"};
  app.parse(args);
  EXPECT_EQ(top, 10) << "the check saw ten, not octal eight (which it refuses)";
  EXPECT_EQ(grouped, -10);
  EXPECT_EQ(sub_value, 10u);
  EXPECT_EQ(real, 10.0);  // a real number is decimal already
  EXPECT_EQ(text, "010");
  std::vector<std::string> hex{"0x10", "--top"};
  try {
    app.parse(hex);
    ADD_FAILURE() << "0x10 was accepted";
  } catch (const CLI::ParseError& e) {
    EXPECT_EQ(std::string(e.what()), "--top: 0x10 is not a decimal integer; accepted: decimal digits (no 0x prefix)");
  }
}

// A timeout is whole milliseconds rounded up: never the 0 the communicators refuse, and a
// year still fits.
TEST(OptionValidators, ATimeoutIsWholeMillisecondsRoundedUp) {
  EXPECT_EQ(timeout_ms(0.0004).count(), 1);
  EXPECT_EQ(timeout_ms(1e-300).count(), 1);
  EXPECT_EQ(timeout_ms(0.001).count(), 1);
  EXPECT_EQ(timeout_ms(0.0015).count(), 2);
  EXPECT_EQ(timeout_ms(0.0010001).count(), 2);
  for (int ms = 1; ms <= 20000; ++ms)  // 2.007 × 1000 is 2007.0000000000002 in doubles: still 2007 ms
    ASSERT_EQ(timeout_ms(ms / 1000.0).count(), ms) << ms / 1000.0 << " s";
  EXPECT_EQ(timeout_ms(60).count(), 60000);
  EXPECT_EQ(timeout_ms(kMaxTimeoutSeconds).count(), 31'536'000'000LL);
  EXPECT_EQ(parse<double>(timeout_seconds(), "31536000"), "");
  EXPECT_EQ(parse<double>(timeout_seconds(), "31536000.5"),
            "--x: 31536000.5 is above 31536000; accepted: seconds > 0, at most a year (31536000)");
  EXPECT_EQ(parse<double>(timeout_seconds(), "0"),
            "--x: 0 is not above 0; accepted: seconds > 0, at most a year (31536000)");
  EXPECT_EQ(timeout_seconds().get_description(), "(0,31536000]");
  // Bounds show 15 significant digits: decimals as written, a third to its 15th digit.
  EXPECT_EQ(number_in(0.1, false, 1.0 / 3.0, "").get_description(), "[0.1,0.333333333333333]");
}

TEST(OptionValidators, HelpShowsEachRuleAsOneWord) {
  EXPECT_EQ(at_least(1, "").get_description(), "≥1");
  EXPECT_EQ(whole_in(1, 4096, "").get_description(), "[1,4096]");
  EXPECT_EQ(whole_in(-2, -1, "").get_description(), "[-2,-1]");
  EXPECT_EQ(number_at_least(0, "").get_description(), "≥0");
  EXPECT_EQ(number_above(0, "").get_description(), ">0");
  EXPECT_EQ(number_in(0.5, true, 1, "").get_description(), "(0.5,1]");
  EXPECT_EQ(number_in(0, false, 2.5, "").get_description(), "[0,2.5]");
}

}  // namespace
}  // namespace mixle::host

// Builders for the cells of the misuse matrix, one per kind of answer, so each
// row reads as its table does: the case, the answer, then the misuse.
#pragma once

#include <exception>
#include <functional>
#include <initializer_list>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include "misuse_matrix.hpp"

namespace strata_misuse {

using act = std::function<void()>;

// One line on stderr starting with `line`, then abort; each act must die so.
inline cell aborts(misuse_case what, std::string line, std::initializer_list<act> acts) {
  return cell{what, answer_kind::aborts, std::move(line), acts, {}, nullptr};
}

// One line and abort, the line told for each act: `doc` says what they share.
inline cell aborts_each(misuse_case what, std::string doc,
                        std::initializer_list<std::pair<std::string, act>> acts) {
  cell c{what, answer_kind::aborts, std::move(doc), {}, {}, nullptr};
  for (const auto& [line, each] : acts) {
    c.lines.push_back(line);
    c.acts.push_back(each);
  }
  return c;
}

// An exception of type E whose what() contains `part`, from each act.
template <class E>
cell throws(misuse_case what, const char* type, std::string part, std::initializer_list<act> acts) {
  cell c{what, answer_kind::throws, std::string(type) + ": \"" + part + "\"", acts, {}, nullptr};
  c.matches = [part](std::exception_ptr thrown) {
    try {
      std::rethrow_exception(thrown);
    } catch (const E& e) {
      return std::string(e.what()).find(part) != std::string::npos;
    } catch (...) {
      return false;
    }
  };
  return c;
}

// A documented failure value with errno set; each act checks it itself.
inline cell sets_errno(misuse_case what, std::string answer, std::initializer_list<act> acts) {
  return cell{what, answer_kind::sets_errno, std::move(answer), acts, {}, nullptr};
}

// A documented, harmless result; each act checks it itself.
inline cell returns(misuse_case what, std::string answer, std::initializer_list<act> acts) {
  return cell{what, answer_kind::returns, std::move(answer), acts, {}, nullptr};
}

// The case cannot arise for this API.
inline cell not_applicable(misuse_case what, std::string reason) {
  return cell{what, answer_kind::not_applicable, std::move(reason), {}, {}, nullptr};
}

// A configuration that trades the check away, saying which.
inline cell unchecked(misuse_case what, std::string reason) {
  return cell{what, answer_kind::unchecked, std::move(reason), {}, {}, nullptr};
}

// A racing cell is run `runs` times, each in a fresh child: a race that lets
// both frees through shows in some run, where one run might be lucky.
inline cell racing(cell c, int runs = 8) {
  c.runs = runs;
  return c;
}

}  // namespace strata_misuse

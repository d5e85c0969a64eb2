#pragma once
// The one error type of the engine. Every message names the thing it is about (a file, a
// tensor, a setting) and what is wrong with it, so that a user reading
// "oxinfer: error: model.gguf: tensor 'blk.0.attn_q.weight' data ends past the end of the file"
// knows what to fix without a debugger.

#include <stdexcept>
#include <string>

namespace oxinfer {

class Error : public std::runtime_error {
public:
    Error(std::string subject, std::string problem);

    const std::string& subject() const noexcept { return subject_; }
    const std::string& problem() const noexcept { return problem_; }

private:
    std::string subject_;
    std::string problem_;
};

}  // namespace oxinfer

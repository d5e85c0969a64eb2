#include <oxinfer/error.h>

namespace oxinfer {

Error::Error(std::string subject, std::string problem)
    : std::runtime_error(subject.empty() ? problem : subject + ": " + problem),
      subject_(std::move(subject)),
      problem_(std::move(problem)) {}

}  // namespace oxinfer

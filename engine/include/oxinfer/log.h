#pragma once
// Logging: one line per message to a sink (stderr by default). The level comes from the
// OXINFER_LOG environment variable (error, warn, info, debug) unless set in code.

#include <functional>
#include <string_view>

namespace oxinfer {

enum class LogLevel { Error = 0, Warn = 1, Info = 2, Debug = 3 };

void set_log_level(LogLevel level);
LogLevel log_level();

// Replaces the sink; an empty function restores stderr. The sink may be called from any thread.
using LogSink = std::function<void(LogLevel, std::string_view)>;
void set_log_sink(LogSink sink);

void log(LogLevel level, std::string_view message);
inline void log_error(std::string_view m) { log(LogLevel::Error, m); }
inline void log_warn(std::string_view m) { log(LogLevel::Warn, m); }
inline void log_info(std::string_view m) { log(LogLevel::Info, m); }
inline void log_debug(std::string_view m) { log(LogLevel::Debug, m); }

}  // namespace oxinfer

#pragma once
// How long the event loop of the current thread kept a 5 ms timer waiting, at worst: the app's
// responsiveness tests read it while the engine loads and generates.

#include <QElapsedTimer>
#include <QObject>
#include <QTimer>

#include <algorithm>

namespace oxinfer::test {

class EventLoopProbe {
public:
    EventLoopProbe() {
        timer_.setInterval(5);
        QObject::connect(&timer_, &QTimer::timeout, [this] {
            const qint64 now = clock_.nsecsElapsed();
            worst_ = std::max(worst_, (now - last_) / 1e6);
            last_ = now;
        });
        clock_.start();
        timer_.start();
    }
    double worstGapMs() const { return worst_; }

private:
    QTimer timer_;
    QElapsedTimer clock_;
    qint64 last_ = 0;
    double worst_ = 0;
};

}  // namespace oxinfer::test

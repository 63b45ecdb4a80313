#include <string>

namespace geo {

// A shape with an area.
class Shape {
public:
    virtual ~Shape() = default;
    virtual double area() const = 0;
    std::string name() const { return "shape"; }
};

template <typename T>
T twice(T value) {
    return value * 2;
}

}  // namespace geo

double geo_area(const geo::Shape& s) {
    return s.area();
}

double Circle::area() const {
    return 3.14 * r * r;
}

#include <math.h>

#define SQUARE(x) ((x) * (x))

/* Area of a ring. */
double ring_area(double outer, double inner) {
    if (inner >= outer) return 0.0;
    return M_PI * (SQUARE(outer) - SQUARE(inner));
}

struct point {
    double x, y;
};

static int count = 0;

int next_id(void);

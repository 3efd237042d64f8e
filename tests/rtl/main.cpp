// Drives tests/rtl/bench.v: a two-phase clock until the bench calls $finish.
#include "Vtheia_bench.h"
#include "verilated.h"

int main(int argc, char** argv) {
    VerilatedContext* context = new VerilatedContext;
    context->commandArgs(argc, argv);
    Vtheia_bench* top = new Vtheia_bench{context};
    while (!context->gotFinish()) {
        top->Clock = 0;
        top->eval();
        top->Clock = 1;
        top->eval();
    }
    top->final();
    delete top;
    delete context;
    return 0;
}

module svc

go 1.18
